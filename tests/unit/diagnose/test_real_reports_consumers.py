"""Real reports of the cuDNN consumers beyond the Python frameworks, table per kind, in the layout
of ``tests/unit/diagnose/test_real_reports.py``: TensorRT's own cuDNN version warnings (through trtexec, its
Python API, torch2trt, TF-TRT, Triton, TensorRT-LLM and the Stable Diffusion web UI extension),
bindings outside Python (Rust's cudarc, Julia's CUDA.jl and Libdl, Java's JavaCPP and
Deeplearning4j, C/C++/Go builds of Caffe, Darknet, dlib, OpenCV and gorgonia), install notes that
are the real cause, a DLL that failed to load without a name, and framework builds without CUDA.
Each kind has near-miss negatives from real reports (cuBLAS/NVRTC/Myelin messages worded like
cuDNN's, TensorRT's info lines, a GPU build without a device, ...) that must stay without a claim.

Rows: (exception, native log, traceback, accepted ids separated by "|", source). A source is the
public report's address, or ``wording:`` and the project source that prints the text. "NONE": no
``cudnn-*`` id may be claimed and nothing may come first. Every row is checked as the three fields
of a cell and pasted as one log (``cudnn-magic explain``).
"""

from __future__ import annotations

import pytest

from cudnn_magic.engines.diagnose import diagnose
from helpers.real_reports import check_real_report

#: TensorRT's check of the cuDNN it loaded against the one it was linked against, every era and logger.
TENSORRT = [
    ('',
     '[05/27/2023-19:14:07] [TRT] [W] TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.7.0\n CUDA lazy loading is not enabled. Enabling it can significantly reduce device memory usage and speed up TensorRT initialization. See "Lazy Loading" section of CUDA documentation https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#lazy-loading',
     '',
     'cudnn-version-mismatch',
     'https://github.com/AUTOMATIC1111/stable-diffusion-webui-tensorrt/issues/3'),
    ('',
     'Activating unet: [TRT] M4RV3LSDUNGEONSNEWV25_mD25\n[05/28/2023-21:01:14] [TRT] [W] TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.7.0\n[05/28/2023-21:01:14] [TRT] [W] TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.7.0\n[05/28/2023-21:01:14] [TRT] [W] CUDA lazy loading is not enabled. Enabling it can significantly reduce device memory usage and speed up TensorRT initialization.',
     '',
     'cudnn-version-mismatch',
     'https://github.com/AUTOMATIC1111/stable-diffusion-webui-tensorrt/issues/15'),
    ('',
     'Loading weights: yolov5s.wts\nBuilding engine, please wait for a while...\n[07/01/2022-17:03:23] [W] [TRT] TensorRT was linked against cuDNN 8.1.0 but loaded cuDNN 8.0.5',
     '',
     'cudnn-version-mismatch',
     'https://github.com/wang-xinyu/tensorrtx/issues/1031'),
    ('',
     '[TRT] TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.8.0',
     '',
     'cudnn-version-mismatch',
     'https://github.com/NVIDIA/TensorRT/issues/3534'),
    ('',
     'WARNING: TensorRT was linked against cuDNN 7.6.3 but loaded cuDNN 7.4.1',
     '',
     'cudnn-version-mismatch',
     'https://github.com/NVIDIA-AI-IOT/torch2trt/issues/154'),
    ('',
     '[TensorRT] WARNING: TensorRT was linked against cuDNN 7.6.3 but loaded cuDNN 7.4.2.\nrtSafe/safeContext.cpp (133) - Cudnn Error in configure: 7 (CUDNN_STATUS_MAPPING_ERROR)\n[TensorRT] ERROR: FAILED_EXECUTION: std::exception',
     '',
     'cudnn-version-mismatch|tensors-on-different-devices',
     'https://github.com/NVIDIA/TensorRT/issues/317'),
    ('',
     'WARNING: TensorRT was compiled against cuDNN 7.5.0 but is linked against cuDNN 7.0.5. This mismatch may potentially cause undefined behavior.',
     '',
     'cudnn-version-mismatch',
     'https://github.com/triton-inference-server/server/issues/200'),
    ('',
     '2021-06-28 21:29:25.597593: W external/org_tensorflow/tensorflow/compiler/tf2tensorrt/utils/trt_logger.cc:38] TF-TRT Warning: DefaultLogger TensorRT was linked against cuDNN 8.1.0 but loaded cuDNN 8.0.5\n2021-06-28 21:29:27.796481: E external/org_tensorflow/tensorflow/compiler/tf2tensorrt/utils/trt_logger.cc:42] DefaultLogger safeContext.cpp (124) - Cudnn Error in initializeCommonContext: 1 (Could not initialize cudnn, please check cudnn installation.)\n2021-06-28 21:29:27.798260: W external/org_tensorflow/tensorflow/compiler/tf2tensorrt/kernels/trt_engine_op.cc:758] TF-TRT Warning: Engine creation for TRTEngineOp_0_0 failed. The native segment will be used instead. Reason: Internal: Failed to build TensorRT engine',
     '',
     'cudnn-version-mismatch|cudnn-init-failed',
     'https://github.com/Adlik/Adlik/issues/497'),
    ('',
     'TensorRT was linked against cuDNN 8.9.6 but loaded cuDNN 8.9.4',
     '',
     'cudnn-version-mismatch',
     'https://github.com/NVIDIA/TensorRT-LLM/issues/974'),
    ('',
     '[06/13/2022-09:40:15] [TRT] [I] [MemUsageChange] Init cuDNN: CPU +699, GPU +264, now: CPU 5693, GPU 1897 (MiB)\n[06/13/2022-09:40:15] [TRT] [W] TensorRT was linked against cuDNN 8.2.1 but loaded cuDNN 8.2.0\n[06/13/2022-09:40:15] [TRT] [I] Local timing cache in use. Profiling results in this builder pass will not be stored.\n[06/13/2022-09:44:48] [TRT] [W] TensorRT was linked against cuBLAS/cuBLASLt 11.6.3 but loaded cuBLAS/cuBLASLt 11.5.1',
     '',
     'cudnn-version-mismatch',
     'https://github.com/zhiqwang/yolort/issues/421'),
    ('',
     'yolov8n_csgo_mirage-640-v5-al-gen-bg.engine is missing. Building engine from YOLO weights. This may take a while...\nModel summary (fused): 168 layers, 3006623 parameters, 0 gradients, 8.1 GFLOPs\n[01/14/2024-15:32:48] [TRT] [W] TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.7.0\n[01/14/2024-15:38:19] [TRT] [W] TensorRT encountered issues when converting weights between types and that could affect accuracy.',
     '',
     'cudnn-version-mismatch',
     'https://github.com/schelmi1/AimAide/issues/6'),
    ('',
     '[TensorRT-LLM][INFO] [MemUsageChange] Init cuDNN: CPU +2, GPU +10, now: CPU 922, GPU 1075 (MiB)\n[TensorRT-LLM][WARNING] TensorRT was linked against cuDNN 8.9.6 but loaded cuDNN 8.9.2',
     '',
     'cudnn-version-mismatch',
     'wording: TensorRT-LLM cpp/tensorrt_llm/runtime/tllmLogger.cpp ([TensorRT-LLM][WARNING] prefix of TensorRT\'s message)'),
    ('',
     '[E] Uncaught exception detected: Unable to open library: libnvinfer_plugin.so.8 due to libcudnn.so.8: cannot open shared object file: No such file or directory',
     '',
     'cudnn-library-not-found',
     'https://github.com/NVIDIA/TensorRT/issues/2908'),
]

#: Bindings outside Python that load cuDNN by name, and native builds against it.
BINDINGS = [
    ('Unable to dynamically load the "cudnn" shared library - searched for library names: ["libcudnn.so", "libcudnn64.so", "libcudnn64_11.so", "libcudnn64_118.so", "libcudnn64_118_0.so", "libcudnn64_110_8.so", "libcudnn64_10.so", "libcudnn64_110_0.so", "libcudnn64_9.so", "libcudnn.so.11", "libcudnn.so.11", "libcudnn.so.10", "libcudnn.so.1"]',
     '',
     '',
     'cudnn-library-not-found',
     'https://github.com/chelsea0x3b/cudarc/issues/529'),
    ('',
     " thread '<unnamed>' panicked at /root/.cargo/registry/src/index.crates.io-6f17d22bba15001f/cudarc-0.12.1/src/lib.rs:98:5:0<00:01, 66.38it/s]\nimage-generations  | Unable to dynamically load the \"cudnn\" shared library - searched for library names: [\"libcudnn.so\", \"libcudnn64.so\", \"libcudnn64_12.so\", \"libcudnn64_124.so\", \"libcudnn64_124_0.so\", \"libcudnn64_120_4.so\", \"libcudnn64_10.so\", \"libcudnn64_120_0.so\", \"libcudnn64_9.so\", \"libcudnn.so.12\", \"libcudnn.so.11\", \"libcudnn.so.10\"]. Ensure that `LD_LIBRARY_PATH` has the correct path to the installed library. If the shared library is present on the system under a different name than one of those listed above, please open a GitHub issue.  ",
     '',
     'cudnn-library-not-found',
     'https://github.com/EricLBuehler/mistral.rs/issues/1053'),
    ('',
     "thread 'main' panicked at C:\\Users\\user\\.cargo\\registry\\src\\index.crates.io-6f17d22bba15001f\\cudarc-0.11.5\\src\\cudnn\\sys\\mod.rs:42:13:\nUnable to find cudnn lib under the names [\"cudnn.dll\", \"cudnn64.dll\", \"cudnn64_12.dll\", \"cudnn64_124.dll\", \"cudnn64_124_0.dll\", \"cudnn64_120_4.dll\"]. Please open GitHub issue.",
     '',
     'cudnn-library-not-found',
     'wording: cudarc 0.11.0-0.11.5 src/cudnn/sys/mod.rs (https://github.com/coreylowman/cudarc/commit/1fa82db)'),
    ("called `Result::unwrap()` on an `Err` value: DlOpen { desc: \"libcudnn.so: cannot open shared object file: No such file or directory\" }",
     '',
     '',
     'cudnn-library-not-found',
     'wording: cudarc <= 0.10 src/cudnn/sys/mod.rs Lib::new(libloading::library_filename("cudnn")).unwrap() (libloading Error::DlOpen)'),
    ('',
     'cuDNN is not available for your platform (x86_64-linux-gnu-libgfortran5-cxx11-libstdcxx30-cuda+none-julia_version+1.10.0)',
     '',
     'cudnn-library-not-found',
     'https://github.com/JuliaGPU/CUDA.jl/issues/2252'),
    ('',
     '┌ Error: cuDNN is not available on your system (looked in /usr/local/cuda/lib64, /usr/local/cuda)\n└ @ cuDNN ~/.julia/packages/cuDNN/7odFC/src/cuDNN.jl:196',
     '',
     'cudnn-library-not-found',
     'wording: cuDNN.jl lib/cudnn/src/cuDNN.jl __init__ (local toolkit)'),
    ('ERROR: This functionality is unavailabe as CUDNN is missing.',
     '',
     '',
     'cudnn-library-not-found',
     'wording: CUDA.jl 3.x deps/bindeps.jl libcudnn()'),
    ("Additional information: Unable to load DLL 'cudnn64_6.dll': The specified module could not be found. (Exception from HRESULT: 0x8007007E)",
     '',
     '',
     'cudnn-library-not-found',
     'https://github.com/cbovar/ConvNetSharp/issues/60'),
    ('InitError: could not load library "C:\\Users\\USER\\.julia\\artifacts\\d0bdf3cb548b47e0ea9808e88a130b8e4a924257\\bin\\cudnn64_7.dll"\nThe specified module could not be found.\nduring initialization of module Flux',
     '',
     '',
     'cudnn-library-not-found',
     'https://github.com/FluxML/Flux.jl/issues/1116'),
    ('ERROR: could not load library "C:\\Users\\sheevy\\.julia\\artifacts\\2ab94e9aee8571e852661694155d44646bf7ad39\\bin\\cudnn_cnn_infer64_8.dll"\nThe specified module could not be found.',
     '',
     '  [1] dlopen(s::String, flags::UInt32; throw_error::Bool)\n    @ Base.Libc.Libdl .\\libdl.jl:117\n  [3] find_cudnn(cuda::CUDA.Deps.ArtifactToolkit, version::Any)\n',
     'cudnn-sublibrary-load-failed|cudnn-library-not-found',
     'https://github.com/JuliaGPU/CUDA.jl/issues/1291'),
    ('',
     '┌ Error: Error during initialization of CUDA.jl\n│   exception =\n│    could not load library "C:\\Users\\jdiegelm\\.julia\\artifacts\\d1e2f396182c9319f1ae2e7f020a3b969ccb8cc6\\bin\\cudnn_ops_infer64_8.dll"\n│    Access is denied.',
     '',
     'cudnn-sublibrary-load-failed|cudnn-library-not-found',
     'https://github.com/JuliaGPU/CUDA.jl/issues/757'),
    ('',
     "o.d.n.l.c.ConvolutionLayer - Could not load CudnnConvolutionHelper\njava.lang.UnsatisfiedLinkError: no jnicudnn in java.library.path\n\tat java.lang.ClassLoader.loadLibrary(ClassLoader.java:1867) ~[na:1.8.0_102]\nCaused by: java.lang.UnsatisfiedLinkError: C:\\Users\\Jürgen\\.javacpp\\cache\\cuda-7.5-1.3-windows-x86_64.jar\\org\\bytedeco\\javacpp\\windows-x86_64\\jnicudnn.dll: Can't find dependent libraries",
     '',
     'cudnn-library-not-found',
     'https://github.com/deeplearning4j/deeplearning4j/issues/2879'),
    ('Caused by: java.lang.UnsatisfiedLinkError: no jnicudnn in java.library.path',
     '',
     '        at java.lang.ClassLoader.loadLibrary(ClassLoader.java:1865)\n        at org.bytedeco.javacpp.Loader.loadLibrary(Loader.java:550)\n        at org.bytedeco.javacpp.cudnn.<clinit>(cudnn.java:12)\n',
     'cudnn-library-not-found',
     'https://github.com/bytedeco/javacpp-presets/issues/83'),
    ('',
     '11:53:13.899 [main] INFO org.deeplearning4j.nn.multilayer.MultiLayerNetwork - Starting MultiLayerNetwork with WorkspaceModes set to [training: ENABLED; inference: ENABLED], cacheMode set to [NONE]\n11:53:14.271 [main] INFO org.deeplearning4j.nn.layers.convolution.ConvolutionLayer - cuDNN not found: use cuDNN for better GPU performance by including the deeplearning4j-cuda module. For more information, please refer to: https://deeplearning4j.konduit.ai/config/backends/config-cudnn',
     '',
     'cudnn-library-not-found',
     'https://github.com/deeplearning4j/deeplearning4j/issues/9376'),
    ('',
     "/usr/bin/ld: cannot find -lcudnn\ncollect2: error: ld returned 1 exit status\nMakefile:143: recipe for target 'darknet' failed\nmake: *** [darknet] Error 1",
     '',
     'cudnn-library-not-found',
     'https://github.com/AlexeyAB/darknet/issues/4445'),
    ('',
     "/usr/bin/ld: cannot find -lcudnn\ncollect2: error: ld returned 1 exit status\nMakefile:81: recipe for target 'libdarknet.so' failed\nmake: *** [libdarknet.so] Error 1",
     '',
     'cudnn-library-not-found',
     'https://github.com/pjreddie/darknet/issues/2605'),
    ('',
     "LINK : fatal error LNK1181: cannot open input file 'cudnn.lib'",
     '',
     'cudnn-library-not-found',
     'https://github.com/chelsea0x3b/cudarc/issues/260'),
    ('',
     'CMake Error at cmake/cudnn.cmake:31 (message):\n  Can not find CuDNN Library',
     '',
     'cudnn-library-not-found',
     'https://github.com/Megvii-BaseDetection/YOLOX/issues/650'),
    ('',
     '-- Found CUDA_CUDNN_LIBRARY=CUDA_CUDNN_LIBRARY-NOTFOUND',
     '',
     'cudnn-library-not-found',
     'https://github.com/dmlc/dgl/issues/647'),
    ('',
     'error: ‘CUDNN_CONVOLUTION_FWD_SPECIFY_WORKSPACE_LIMIT’ was not declared in this scope\nerror: ‘CUDNN_CONVOLUTION_BWD_FILTER_SPECIFY_WORKSPACE_LIMIT’ was not declared in this scope',
     '',
     'cudnn-version-mismatch',
     'https://github.com/BVLC/caffe/issues/6970'),
    ('',
     '/home/zz/work/shadow/shadow/operators/kernels/conv.cu(178): error: identifier "CUDNN_CONVOLUTION_FWD_SPECIFY_WORKSPACE_LIMIT" is undefined\n\n/home/zz/work/shadow/shadow/operators/kernels/conv.cu(178): error: identifier "cudnnGetConvolutionForwardAlgorithm" is undefined\n\n2 errors detected in the compilation of "/home/zz/work/shadow/shadow/operators/kernels/conv.cu".',
     '',
     'cudnn-version-mismatch',
     'https://github.com/junluan/shadow/issues/2'),
    ('',
     "src/nnet/cudnn.cpp:222:5: error: ‘cudnnGetConvolutionBackwardFilterWorkspaceSize’ was not declared in this scope\n     ));\n     ^\nmake: *** [src/nnet/cudnn.o] Error 1",
     '',
     'cudnn-version-mismatch',
     'https://github.com/andersbll/cudarray/issues/59'),
    ('',
     'in ngraph/src/ngraph/runtime/gpu/cudnn_emitter.cpp\nerror: ‘cudnnSetRNNDescriptor’ was not declared in this scope; did you mean ‘cudnnSetLRNDescriptor',
     '',
     'cudnn-version-mismatch',
     'https://github.com/NervanaSystems/ngraph/issues/4953'),
    ('',
     '# gorgonia.org/cu/dnn\n/root/go/pkg/mod/gorgonia.org/cu@v0.9.3/dnn/rnn.go:67:19: could not determine kind of name for C.cudnnSetRNNDescriptor',
     '',
     'cudnn-version-mismatch',
     'https://github.com/gorgonia/cu/issues/61'),
    ('',
     'convolution.cu(82): error: identifier "CUDNN_CONVOLUTION_FWD_PREFER_FASTEST" is undefined\n\nconvolution.cu(82): error: identifier "cudnnGetConvolutionForwardAlgorithm" is undefined',
     '',
     'cudnn-version-mismatch',
     'https://github.com/haanjack/mnist-cudnn/issues/6'),
    ('',
     '[ WARN:0] global /opt/opencv/modules/dnn/src/cuda4dnn/init.hpp (34) checkVersions cuDNN reports version 8201 which does not match with the version 8000 with which OpenCV was built',
     '',
     'cudnn-version-mismatch',
     'https://github.com/dusty-nv/jetson-inference/issues/1409'),
    ('RuntimeError: Error while calling cudnnCreate(&handles[new_device_id]) in file /root/data/dlib/dlib/cuda/cudnn_dlibapi.cpp:104. code: 4, reason: A call to cuDNN failed',
     '',
     '  File "./cnn_face_detector.py", line 56, in <module>\n    dets = cnn_face_detector(img, 1)\n',
     'cudnn-init-failed|cudnn-internal-error',
     'https://github.com/davisking/dlib/issues/1772'),
    ('RuntimeError: Error while calling cudnnCreate(&handles[new_device_id]) \nin file /tmp/pip-build-ilc3dz0e/dlib/dlib/dnn/cudnn_dlibapi.cpp:104. code: 1, \nreason: CUDA Runtime API initialization failed.',
     '',
     '',
     'cudnn-init-failed',
     'https://github.com/swook/GazeML/issues/12'),
    ("terminate called after throwing an instance of 'dlib::cudnn_error'\n what():  Error while calling cudnnGetConvolutionBackwardFilterWorkspaceSize( context(), descriptor(data), descriptor(dest_desc), (const cudnnConvolutionDescriptor_t)conv_handle, (const cudnnFilterDescriptor_t)filter_handle, (cudnnConvolutionBwdFilterAlgo_t)backward_filters_algo, &backward_filters_workspace_size_in_bytes) in file /home/nvidia/dlib/dlib/cuda/cudnn_dlibapi.cpp:1046. code: 9, reason: CUDNN_STATUS_NOT_SUPPORTED",
     '',
     '',
     'cudnn-unsupported-config',
     'https://github.com/davisking/dlib/issues/2330'),
    ('',
     'Error while calling cudnnSetFilter4dDescriptor((cudnnFilterDescriptor_t)filter_handle, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, filters.num_samples(), filters.k(), filters.nr(), filters.nc()) in file dlib-19.3/dlib/dnn/cudnn_dlibapi.cpp:822. code: 3, reason: CUDNN_STATUS_BAD_PARAM',
     '',
     'cudnn-bad-param|cudnn-version-mismatch',
     'https://github.com/davisking/dlib/issues/457'),
]

#: Install notes a framework prints only because cuDNN did not load, beside the failure they explain.
INSTALL_NOTES = [
    ('',
     "W0708 18:03:12.000000 12345 dynamic_loader.cc:310] Note: [Recommend] copy cudnn into CUDA installation directory. \n For instance, download cudnn-10.0-windows10-x64-v7.6.5.32.zip from NVIDIA's official website, \nthen, unzip it and copy it into C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.0\nYou should do this according to your CUDA installation directory and CUDNN version.",
     '',
     'cudnn-library-not-found',
     'wording: PaddlePaddle paddle/phi/backends/dynload/dynamic_loader.cc GetCUDNNDsoHandle (win_warn_meg)'),
    ("OSError: (External) CUDNN error(1), CUDNN_STATUS_NOT_INITIALIZED. \n  [Hint: 'CUDNN_STATUS_NOT_INITIALIZED'.  The cuDNN library was not initialized properly.",
     "W1102 09:14:01.000000 4412 dynamic_loader.cc:289] Note: [Recommend] copy cudnn into CUDA installation directory. \n For instance, download cudnn-10.0-windows10-x64-v7.6.5.32.zip from NVIDIA's official website, \nthen, unzip it and copy it into C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.0\nYou should do this according to your CUDA installation directory and CUDNN version.",
     '',
     'cudnn-library-not-found',
     'wording: PaddlePaddle dynamic_loader.cc note printed before the failure it explains (CUDNN error(1) from the next cuDNN call)'),
    ('',
     'Note: [Recommend] copy cudnn into /usr/local/cuda/ \n For instance, sudo tar -xzf cudnn-7.5-osx-x64-v5.0-ga.tgz -C /usr/local \n sudo chmod a+r /usr/local/cuda/include/cudnn.h /usr/local/cuda/lib/libcudnn*',
     '',
     'cudnn-library-not-found',
     'wording: PaddlePaddle dynamic_loader.cc GetCUDNNDsoHandle (mac_warn_meg)'),
    ('',
     "W0827 11:01:05.964001 21363 device_context.cc:252] Please NOTE: device: 0, CUDA Capability: 75, Driver API Version: 10.2, Runtime API Version: 10.0\nW0827 11:01:05.964174 21363 dynamic_loader.cc:120] Can not find library: libcudnn.so. The process maybe hang. Please try to add the lib path to LD_LIBRARY_PATH.\n/opt/miniconda3/envs/yolo/lib/python3.7/site-packages/paddle/fluid/executor.py:1070: UserWarning: The following exception is not an EOF exception.\n  \"The following exception is not an EOF exception.\")",
     '',
     'cudnn-library-not-found',
     'https://github.com/PaddlePaddle/Paddle/issues/26719'),
    ('ImportError: DLL load failed: The specified module could not be found.',
     "Traceback (most recent call last):\n  File \"C:\\Python36\\lib\\site-packages\\tensorflow\\python\\platform\\self_check.py\", line 75, in preload_check\n    ctypes.WinDLL(build_info.cudnn_dll_name)\nOSError: [WinError 126] The specified module could not be found\nImportError: Could not find 'cudnn64_7.dll'. TensorFlow requires that this DLL be installed in a directory that is named in your %PATH% environment variable. Note that installing cuDNN is a separate step from installing CUDA, and this DLL is often found in a different directory from the CUDA DLLs. You may install the necessary DLL by downloading cuDNN 7 from this URL: https://developer.nvidia.com/cudnn",
     '',
     'cudnn-library-not-found',
     'wording: TensorFlow 1.x tensorflow/python/platform/self_check.py preload_check (Windows)'),
    ('',
     "~/anaconda3/envs/model-angelo_local/lib/python3.10/site-packages/torch/nn/modules/conv.py:605: UserWarning: Applied workaround for CuDNN issue, install nvrtc.so (Triggered internally at /opt/conda/conda-bld/pytorch_1711403388920/work/aten/src/ATen/native/cudnn/Conv_v8.cpp:80.)",
     '',
     'cudnn-sublibrary-load-failed',
     'https://github.com/3dem/model-angelo/issues/104'),
    ('RuntimeError: GET was unable to find an engine to execute this computation',
     "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/conv.py:456: UserWarning: Applied workaround for CuDNN issue, install nvrtc.so (Triggered internally at ../aten/src/ATen/native/cudnn/Conv_v8.cpp:80.)\n  return F.conv2d(input, weight, bias, self.stride,",
     '',
     'cudnn-sublibrary-load-failed',
     'wording: PyTorch aten/src/ATen/native/cudnn/Conv_v8.cpp (the workaround warning) before the engine search that then fails'),
]

#: A DLL that failed to load, named by no one: never a cuDNN claim from the text alone.
UNNAMED_DLL = [
    ('ImportError: DLL load failed while importing dlib: The specified module could not be found.',
     '',
     '  File "<stdin>", line 1, in <module>\n',
     'unnamed-library-load-failed',
     'https://github.com/davisking/dlib/issues/2079'),
    ('ImportError: Failed to load DLL while importing _dlib_pybind11: The specified module was not found',
     '',
     '',
     'unnamed-library-load-failed',
     'https://github.com/davisking/dlib/issues/2810'),
    ('ImportError: DLL load failed: The specified module could not be found.',
     '',
     '',
     'unnamed-library-load-failed',
     'https://github.com/davisking/dlib/issues/1954'),
    ('ImportError: DLL load failed while importing _89_C: 找不到指定的模块。',
     '',
     '',
     'unnamed-library-load-failed',
     'https://github.com/NVlabs/tiny-cuda-nn/issues/348'),
    ('ImportError: DLL load failed: The specified module could not be found.',
     "Traceback (most recent call last):\n  File \"C:\\Users\\User\\Anaconda3\\lib\\site-packages\\tensorflow\\python\\pywrap_tensorflow.py\", line 58, in <module>\n    from tensorflow.python.pywrap_tensorflow_internal import *\n  File \"C:\\Users\\User\\Anaconda3\\lib\\site-packages\\tensorflow\\python\\pywrap_tensorflow_internal.py\", line 28, in <module>\n    _pywrap_tensorflow_internal = swig_import_helper()\nImportError: DLL load failed: The specified module could not be found.\n\nFailed to load the native TensorFlow runtime.",
     '',
     'unnamed-library-load-failed',
     'https://github.com/tensorflow/tensorflow/issues/22794'),
    ('OSError: [WinError 126] The specified module could not be found. Error loading "C:\\Users\\me\\miniconda3\\envs\\sd\\lib\\site-packages\\torch\\lib\\torch_cuda.dll" or one of its dependencies.',
     '',
     '',
     'unnamed-library-load-failed',
     'wording: PyTorch torch/__init__.py _load_dll_libraries (WinError 126, "Error loading ... or one of its dependencies")'),
    ("System.DllNotFoundException: 'Unable to load DLL 'DlibDotNetNativeDnn' or one of its dependencies: The specified module could not be found. (Exception from HRESULT: 0x8007007E)'",
     '',
     '',
     'unnamed-library-load-failed',
     'https://github.com/takuya-takeuchi/FaceRecognitionDotNet/issues/47'),
    ("Unable to load DLL 'DlibDotNetNativeDnn' or one of its dependencies: 找不到指定的模块。 (Exception from HRESULT: 0x8007007E)",
     '',
     '',
     'unnamed-library-load-failed',
     'https://github.com/takuya-takeuchi/FaceRecognitionDotNet/issues/57'),
    ("System.DllNotFoundException - Unable to load DLL 'x64\\yolo_cpp_dll_gpu.dll': The specified module could not be found.",
     '',
     '',
     'unnamed-library-load-failed',
     'https://github.com/AlturosDestinations/Alturos.Yolo/issues/95'),
    ("FileNotFoundError: Could not find module 'C:\\Program Files\\NVIDIA\\CUDNN\\bin\\mylayers.dll' (or one of its dependencies). Try using the full path with constructor syntax.",
     '',
     '',
     'unnamed-library-load-failed',
     'wording: CPython Lib/ctypes/__init__.py CDLL (Python 3.8+ on Windows)'),
]

#: Framework builds without CUDA, asked for the GPU (catalogue id shared with %cudnn_check's finding).
CPU_BUILDS = [
    ('AssertionError: Torch not compiled with CUDA enabled',
     '',
     '  File "D:\\anaconda3\\envs\\script\\lib\\site-packages\\torch\\nn\\modules\\module.py", line 688, in <lambda>\n    return self._apply(lambda t: t.cuda(device))\n  File "D:\\anaconda3\\envs\\script\\lib\\site-packages\\torch\\cuda\\__init__.py", line 210, in _lazy_init\n    raise AssertionError("Torch not compiled with CUDA enabled")\n',
     'framework-cpu-build',
     'https://github.com/locuslab/TCN/issues/67'),
    ('AssertionError: Torch not compiled with CUDA enabled',
     '',
     '  File "/home/xx/anaconda3/envs/tf-gpu/lib/python3.7/site-packages/torch/cuda/__init__.py", line 95, in _check_driver\n    raise AssertionError("Torch not compiled with CUDA enabled")\n',
     'framework-cpu-build',
     'https://github.com/facebookresearch/detectron2/issues/460'),
    ('AssertionError: Torch not compiled with CUDA enabled',
     'NVIDIA-SMI 475.14       Driver Version: 475.14       CUDA Version: 11.4',
     '',
     'framework-cpu-build',
     'https://github.com/X-PLUG/MobileAgent/issues/60'),
    ('RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with map_location=torch.device(\'cpu\') to map your storages to the CPU.',
     'PyTorch version: 2.1.0+cpu\nIs debug build: False\nCUDA used to build PyTorch: None',
     '',
     'framework-cpu-build',
     'wording: PyTorch torch/serialization.py validate_cuda_device, with torch/utils/collect_env.py of a +cpu wheel'),
    ('RuntimeError: Not compiled with GPU support',
     '',
     '  File "/usr/local/lib/python3.8/dist-packages/torchvision/ops/boxes.py", line 41, in nms\n    return torch.ops.torchvision.nms(boxes, scores, iou_threshold)\n',
     'framework-cpu-build',
     'wording: torchvision csrc/ops (nms without CUDA: "Not compiled with GPU support")'),
    ("tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device to node 'gradients/ff_1/add_grad/BroadcastGradientArgs': Could not satisfy explicit device specification '/device:GPU:0' because no devices matching that specification are registered in this process; available devices: /job:localhost/replica:0/task:0/cpu:0",
     '',
     '',
     'framework-cpu-build',
     'https://github.com/tensorflow/tensorflow/issues/8093'),
    ("tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device for operation 'Model/word_embedding': Operation was explicitly assigned to /device:GPU:0 but available devices are [ /job:localhost/replica:0/task:0/device:CPU:0 ]. Make sure the device specification refers to a valid device.",
     '2018-05-14 20:28:33.623427: I tensorflow/core/platform/cpu_feature_guard.cc:137] Your CPU supports instructions that this TensorFlow binary was not compiled to use: SSE4.1 SSE4.2 AVX AVX2 FMA',
     '',
     'framework-cpu-build',
     'https://github.com/zhiguowang/BiMPM/issues/36'),
    ("RuntimeError: Unknown backend: 'gpu' requested, but no platforms that are \ninstances of gpu are present. Platforms present are: cpu",
     '',
     '',
     'framework-cpu-build',
     'https://github.com/jlin816/dynalang/issues/6'),
    ("RuntimeError: Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are present. Platforms present are: interpreter,cpu",
     '| NVIDIA-SMI 525.60.13    Driver Version: 525.60.13    CUDA Version: 12.0     |',
     '',
     'framework-cpu-build',
     'https://github.com/danijar/dreamerv3/issues/18'),
    ('',
     "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: 'AzureExecutionProvider, CPUExecutionProvider'\n  warnings.warn(",
     '',
     'framework-cpu-build',
     'https://github.com/SunOner/sunone_aimbot/issues/195'),
    ('',
     "onnxruntime_inference_collection.py:69: UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider\nnames.Available providers: 'AzureExecutionProvider, CPUExecutionProvider'",
     '',
     'framework-cpu-build',
     'https://github.com/s9roll7/animatediff-cli-prompt-travel/issues/206'),
    ("ValueError: Asked to use CUDAExecutionProvider as an ONNX Runtime execution provider, but the available execution providers are ['AzureExecutionProvider', 'CPUExecutionProvider'].",
     '',
     '',
     'framework-cpu-build',
     'https://github.com/breezedeus/Pix2Text/issues/65'),
    ('',
     'E0714 16:34:40.972663 31948 pybind.cc:1277] Cannot use GPU because you have installed CPU version PaddlePaddle.\nIf you want to use GPU, please try to install GPU version PaddlePaddle by: pip install paddlepaddle-gpu\nIf you only have CPU, please change CUDAPlace(0) to be CPUPlace().',
     '',
     'framework-cpu-build',
     'https://github.com/PaddlePaddle/PARL/issues/929'),
    ('',
     '[07-22 16:34:54 MainThread @machine_info.py:88] nvidia-smi -L found gpu count: 1\nE0722 16:34:54.516928 15256 pybind.cc:2342] Cannot use GPU because you have installed CPU version PaddlePaddle.',
     '',
     'framework-cpu-build',
     'https://github.com/PaddlePaddle/Paddle/issues/44531'),
    ('',
     '2020-09-08 09:14:59 ERROR: You are using paddlepaddle cpu version! Please try to install paddlepaddle-gpu to run model on GPU.\nINFO 2020-09-08 01:15:03,836 utils.py:269] terminate all the procs',
     '',
     'framework-cpu-build',
     'https://github.com/PaddlePaddle/PaddleClas/issues/268'),
    ('',
     '2020-07-23 09:22:17,124-ERROR: Config use_gpu cannot be set as true while you are using paddlepaddle cpu version !\nPlease try:\n        1. Install paddlepaddle-gpu to run model on GPU\n        2. Set use_gpu as false in config file to run model on CPU',
     '',
     'framework-cpu-build',
     'https://github.com/PaddlePaddle/PaddleDetection/issues/1091'),
    ('mxnet.base.MXNetError: [10:23:31] src/storage/storage.cc:119: Compile with USE_CUDA=1 to enable GPU usage',
     '',
     '',
     'framework-cpu-build',
     'wording: MXNet src/storage/storage.cc (a GPU context in a build without CUDA)'),
    ('',
     '[ WARN:0@72.901] global /io/opencv/modules/dnn/src/net_impl.cpp (179) setUpNet DNN module was not built with CUDA backend; switching to CPU',
     '',
     'framework-cpu-build',
     'https://github.com/marco-ardi/Telegram-Image-Upscaler-Bot/issues/1'),
    ('',
     '[ WARN:0] global C:\\lib\\opencv2\\modules\\dnn\\src\\dnn.cpp (1363) cv::dnn::dnn4_v20191202::Net::Impl::setUpNet DNN module was not built with CUDA backend; switching to CPU',
     '',
     'framework-cpu-build',
     'https://github.com/shimat/opencvsharp/issues/892'),
    ('',
     '[WARM:0@2.582] global net_impl.cpp:174 cv::dmn::dnn4_v20221220:Net::Impl::setUpNet DNN module was not built with CUDA backend;switching to CPU',
     '',
     'framework-cpu-build',
     'https://github.com/ai-aimbot/AIMr/issues/8'),
    ('ValueError: This CTranslate2 package was not compiled with CUDA support',
     '',
     '  File "/Users/me/venv/lib/python3.11/site-packages/faster_whisper/transcribe.py", line 145, in __init__\n    self.model = ctranslate2.models.Whisper(\n',
     'framework-cpu-build',
     'wording: CTranslate2 python/cpp/module.cc (a macOS wheel, faster-whisper)'),
]

#: Near misses of each kind above, from real reports: no cudnn-* id may be claimed.
NEGATIVES = [
    # TensorRT: cuBLAS and Myelin messages worded like its cuDNN check, and info lines naming cuDNN
    ('',
     '[08/18/2022-02:11:58] [W] [TRT] TensorRT was linked against cuBLAS/cuBLAS LT 11.6.1 but loaded cuBLAS/cuBLAS LT 11.4.2\n[08/18/2022-02:11:58] [I] [TRT] [MemUsageChange] Init cuBLAS/cuBLASLt: CPU +399, GPU +166, now: CPU 849, GPU 455 (MiB)\n[08/18/2022-02:11:58] [I] [TRT] [MemUsageChange] Init cuDNN: CPU +157, GPU +172, now: CPU 1006, GPU 627 (MiB)',
     '',
     'NONE',
     'https://github.com/open-mmlab/mmdeploy/issues/914 (its cuBLAS lines)'),
    ('',
     '[TensorRT] WARNING: TensorRT was linked against cuBLAS/cuBLAS LT 11.4.2 but loaded cuBLAS/cuBLAS LT 11.2.1\n[TensorRT] WARNING: TensorRT was linked against cuBLAS/cuBLAS LT 11.4.2 but loaded cuBLAS/cuBLAS LT 11.2.1\n[TensorRT] ERROR: 1: [graphContext.h::MyelinGraphContext::24] Error Code 1: Myelin (myelinVersionMismatch : Compiled against cuDNN 11.4.1.0 but running against cuDNN 11.2.1.0.\n)\n[TensorRT] WARNING: Could not set default profile 0 for execution context. Profile index must be set explicitly.',
     '',
     'NONE',
     'https://github.com/NVIDIA/TensorRT/issues/1292'),
    ('',
     '[2022-03-24 00:18:45.801] [mmdeploy] [warning] TRTNet: TensorRT was linked against cuBLAS/cuBLAS LT 11.6.5 but loaded cuBLAS/cuBLAS LT 11.2.1\n[2022-03-24 00:18:49.177] [mmdeploy] [error] TRTNet: 1: [graphContext.h::MyelinGraphContext::24] Error Code 1: Myelin (Compiled against cuDNN 10.2.1.0 but running against cuDNN 11.2.1.0.)',
     '',
     'NONE',
     'https://github.com/open-mmlab/mmdeploy/issues/266'),
    ('',
     '[TRT] [E] 1: [raiiMyelinGraph.h::RAIIMyelinGraph::24] Error Code 1: Myelin (Compiled against cuBLASLt 11.9.2.0 but running against cuBLASLt 11.2.1.0.)',
     '',
     'NONE',
     'https://github.com/NVIDIA/TensorRT/issues/3236'),
    ('',
     '[V] Trying to load shared library libcudnn.so.8\n[V] Loaded shared library libcudnn.so.8\n[V] Using cuDNN as plugin tactic source\n[V] Using cuDNN as core library tactic source\n[I] [MemUsageChange] Init cuDNN: CPU +617, GPU +586, now: CPU 927, GPU 4940 (MiB)',
     '',
     'NONE',
     'https://github.com/NVIDIA/TensorRT/issues/3917'),
    ('',
     '[W] [TRT] Detected invalid timing cache, setup a local cache instead\nnvrtc: error: invalid value for --gpu-architecture (-arch)\n\n[W] [TRT] Skipping tactic 0 due to kernel generation error.\nnvrtc: error: invalid value for --gpu-architecture (-arch)\n\n[W] [TRT] Skipping tactic 1 due to kernel generation error.',
     '',
     'NONE',
     'https://github.com/NVIDIA/TensorRT/issues/1398 (its NVRTC lines)'),
    # bindings: the same loaders naming a library other than cuDNN
    ('',
     "thread 'main' panicked at cudarc-0.12.1/src/lib.rs:98:5:\nUnable to dynamically load the \"cublas\" shared library - searched for library names: [\"libcublas.so\", \"libcublas64.so\", \"libcublas64_12.so\", \"libcublas.so.12\", \"libcublas.so.11\"]. Ensure that `LD_LIBRARY_PATH` has the correct path to the installed library.",
     '',
     'NONE',
     'wording: cudarc src/lib.rs panic_no_lib_found for cuBLAS'),
    ('',
     "# gorgonia.org/cu\nC:/TDM-GCC-64/bin/../lib/gcc/x86_64-w64-mingw32/5.1.0/../../../../x86_64-w64-mingw32/bin/ld.exe: cannot find -lcuda\ncollect2.exe: error: ld returned 1 exit status",
     '',
     'NONE',
     'https://github.com/gorgonia/cu/issues/55'),
    ('',
     "terminate called after throwing an instance of 'dlib::cublas_error'\n  what():  Error while calling cublasCreate(&handles[new_device_id]) in file /home/ubuntu/dlib/dlib/cuda/cublas_dlibapi.cpp:78. code: 1, reason: CUDA Runtime API initialization failed.",
     '',
     'NONE',
     'https://github.com/davisking/dlib/issues/2200'),
    ('',
     "Error while calling cudaMalloc(&backward_data_workspace, backward_data_workspace_size_in_bytes) in file /home/zhaixingzi/Applications/dlib/dlib/dnn/cudnn_dlibapi.cpp:888. code: 2, reason: out of memory",
     '',
     'NONE|gpu-out-of-memory',
     'https://github.com/davisking/dlib/issues/462'),
    ('',
     'Debug: Loading library cudart\nDebug: Failed to load for cudart@.11.0: java.lang.UnsatisfiedLinkError: no cudart in java.library.path: /layers/paketo-buildpacks_bellsoft-liberica/jre/lib:/usr/java/packages/lib:/usr/lib64:/lib64:/lib:/usr/lib\nDebug: Loading library cublasLt\nDebug: Failed to load for cublasLt@.11: java.lang.UnsatisfiedLinkError: no cublasLt in java.library.path: /layers/paketo-buildpacks_bellsoft-liberica/jre/lib:/usr/java/packages/lib:/usr/lib64:/lib64:/lib:/usr/lib',
     '',
     'NONE',
     'https://github.com/tensorflow/java/issues/598'),
    ('',
     'I0308 13:33:15.501793 17393 operator.cc:173] Operator with engine CUDNN is not available for operator AffineChannel.\nI0308 13:33:15.503214 17393 operator.cc:173] Operator with engine CUDNN is not available for operator Sum.',
     '',
     'NONE',
     'https://github.com/shinseung428/detectron_webcam_example/issues/1'),
    ('',
     '/root/go/pkg/mod/gorgonia.org/cu@v0.9.3/addressing.go:3:11: fatal error: cuda.h: No such file or directory\n    3 | // #include <cuda.h>\n      |           ^~~~~~~~\ncompilation terminated.',
     '',
     'NONE',
     'https://github.com/gorgonia/cu/issues/61 (its cuda.h lines)'),
    ('',
     '[ WARN:0@410.036] global init.hpp:32 checkVersions cuDNN reports version 90.1 which is not compatible with the version 9.1 with which OpenCV was built\n[ WARN:0@410.041] global init.hpp:32 checkVersions cuDNN reports version 90.1 which is not compatible with the version 9.1 with which OpenCV was built\n[       OK ] Test_Torch_layers.net_logsoftmax/0 (11 ms)',
     '',
     'NONE',
     'https://github.com/opencv/opencv/issues/25711'),
    ('',
     ' WARN:0@0.446] global init.hpp:32 checkVersions cuDNN reports version 90.5 which is not compatible with the version 9.5 with which OpenCV was built',
     '',
     'NONE',
     'https://github.com/opencv/opencv/issues/26332'),
    ('',
     '[ WARN:0] global init.hpp (29) checkVersions CUDART reports version 11020 which does not match with the version 11010 with which OpenCV was built',
     '',
     'NONE',
     'wording: OpenCV modules/dnn/src/cuda4dnn/init.hpp checkVersions (the CUDA runtime, not cuDNN)'),
    ('',
     '[ WARN:0] global ../modules/dnn/src/dnn.cpp (1308) setUpNet unable to use CUDA backend; switching to CPU',
     '',
     'NONE',
     'wording: OpenCV modules/dnn/src/dnn.cpp setUpNet (a CUDA build that found no usable device)'),
    # install notes and hints that are not a cuDNN fault
    ('',
     'W0508 10:00:00.000000  1234 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: 8.6, Driver API Version: 12.0, Runtime API Version: 11.8\nW0508 10:00:00.000000  1234 gpu_resources.cc:149] device: 0, cuDNN Version: 8.9.',
     '',
     'NONE',
     'wording: PaddlePaddle paddle/phi/backends/gpu/gpu_resources.cc start-up notes'),
    ('',
     "WARNING:tensorflow:Layer lstm will not use cuDNN kernels since it doesn't meet the criteria. It will use a generic GPU kernel as fallback when running on GPU.",
     '',
     'NONE',
     'wording: TensorFlow keras/layers/recurrent_v2.py (LSTM without the cuDNN criteria)'),
    ('',
     '[W] [TRT] TensorRT was linked against cuBLAS/cuBLAS LT 11.2.0 but loaded cuBLAS/cuBLAS LT 11.1.0',
     '',
     'NONE',
     'https://github.com/NVIDIA/TensorRT/issues/1398'),
    # a DLL that failed to load, named: a library other than cuDNN
    ('ImportError: DLL load failed while importing onnxruntime_pybind11_state: The specified module could not be found.',
     "2024-01-01 [E:onnxruntime:Default, provider_bridge_ort.cc:1193] Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open shared object file: No such file or directory",
     '',
     'NONE',
     'wording: ONNX Runtime provider_bridge_ort.cc naming cuBLASLt beside the bare DLL failure'),
    # CPU builds: a GPU build that has no device, an op without a GPU kernel, CPU instruction notes
    ('',
     'You are using GPU version Paddle, but your CUDA device is not set properly. CPU device will be used by default.',
     '',
     'NONE',
     'https://github.com/PaddlePaddle/Paddle/issues/46492'),
    ("InvalidArgumentError (see above for traceback): Cannot assign a device for operation 'InceptionV4/Logits/Predictions': Could not satisfy explicit device specification '/device:GPU:0' because no supported kernel for GPU devices is available.",
     '',
     '',
     'NONE',
     'https://github.com/tensorflow/models/issues/4548'),
    ("tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device for operation gpu_0/model/resnet_backbone/res1_input_conv/L2Loss: {{node gpu_0/model/resnet_backbone/res1_input_conv/L2Loss}}was explicitly assigned to /device:GPU:0 but available devices are [ /job:localhost/replica:0/task:0/device:CPU:0, /job:localhost/replica:0/task:0/device:XLA_CPU:0, /job:localhost/replica:0/task:0/device:XLA_GPU:0, /job:localhost/replica:0/task:0/device:XLA_GPU:1 ]. Make sure the device specification refers to a valid device.",
     '',
     '',
     'NONE',
     'https://github.com/LiyaoTang/contrastBoundary/issues/16'),
    ('',
     '2018-05-14 20:28:33.623427: I tensorflow/core/platform/cpu_feature_guard.cc:137] Your CPU supports instructions that this TensorFlow binary was not compiled to use: SSE4.1 SSE4.2 AVX AVX2 FMA',
     '',
     'NONE',
     'https://github.com/zhiguowang/BiMPM/issues/36 (its start-up line)'),
    ('',
     'An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.\nCUDA backend failed to initialize: Unable to load cuPTI. Is it installed? (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)',
     '',
     'NONE',
     'wording: JAX jax/_src/xla_bridge.py (the CUDA plugin is installed and failed for a non-cuDNN library)'),
    ('RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx',
     '',
     '',
     'NONE',
     'wording: PyTorch c10/cuda/CUDAFunctions.cpp (a CUDA build with no driver)'),
]

KINDS = {
    "tensorrt": TENSORRT, "bindings": BINDINGS, "install-notes": INSTALL_NOTES, "unnamed-dll": UNNAMED_DLL,
    "cpu-builds": CPU_BUILDS, "negatives": NEGATIVES,
}
ROWS = [(kind, i, row) for kind, rows in KINDS.items() for i, row in enumerate(rows)]


@pytest.mark.parametrize("kind,i,row", ROWS, ids=[f"{k}-{i:02d}" for k, i, _ in ROWS])
def test_real_report(kind, i, row):
    check_real_report(row)


def test_every_kind_has_real_wordings_and_near_misses():
    for kind, rows in KINDS.items():
        assert len(rows) >= 5, kind
    texts = [r[0] + r[1] + r[2] for rows in KINDS.values() for r in rows]
    assert len(texts) == len(set(texts))


# --------------------------------------------------------------------------- what the diagnoses say


def _row(table, source):
    """The row of ``table`` whose source names ``source`` (rows are found by their report, not their index)."""
    return next(r for r in table if source in r[4])


def _top(exc="", log="", tb="", report=None):
    res = diagnose(exception=exc, log=log, traceback=tb, report=report)
    assert res, (exc, log)
    return res


def test_tensorrt_says_which_side_is_older_and_that_it_only_warns():
    older = _top(log=_row(TENSORRT, 'stable-diffusion-webui-tensorrt/issues/3')[1])[0]
    assert older.title.startswith("TensorRT loaded cuDNN 8.7.0, older than the 8.9.0 it was linked against")
    assert "only warns" in older.title and "warning" in older.summary
    assert (older.versions["loaded"], older.versions["compiled"]) == ("8.7.0", "8.9.0")
    fix = next(f for f in older.fixes if f.id == "install-matching-cudnn")
    assert '"nvidia-cudnn-cu12<9,>=8.9"' in fix.action  # at least the linked release, within its major
    # TensorRT 5.1's wording: the same sides, "compiled against" X, "is linked against" Y
    assert _top(log=_row(TENSORRT, 'server/issues/200')[1])[0].title.startswith("TensorRT loaded cuDNN 7.0.5, older than the 7.5.0")
    # a newer minor of the same major: still the kind, said so, ranked lower, and nothing to change
    newer = _top(log="[W] [TRT] TensorRT was linked against cuDNN 8.2.1 but loaded cuDNN 8.4.0")[0]
    assert newer.id == "cudnn-version-mismatch" and newer.title.startswith("TensorRT loaded cuDNN 8.4.0, newer than the 8.2.1")
    assert newer.fixes == () and newer.score < older.score


def test_a_tensorrt_warning_after_a_cell_that_succeeded():
    from cudnn_magic.engines.diagnose import gpu_unused_warnings

    assert [d.id for d in gpu_unused_warnings(_row(TENSORRT, 'stable-diffusion-webui-tensorrt/issues/3')[1])] == ["cudnn-version-mismatch"]
    assert gpu_unused_warnings("[W] [TRT] TensorRT was linked against cuDNN 8.2.1 but loaded cuDNN 8.4.0") == []


def test_myelin_names_cublaslt_cudnn_only_below_major_ten():
    line = "Error Code 1: Myelin (Compiled against cuDNN {} but running against cuDNN {}.)"
    assert not diagnose(log=line.format("11.4.1.0", "11.2.1.0"))  # cuBLASLt releases under cuDNN's name
    assert _top(log=line.format("8.9.2", "8.6.0"))[0].id == "cudnn-version-mismatch"


def test_bindings_get_their_own_fix_words_not_a_python_frameworks():
    rust = _top(exc=_row(BINDINGS, 'cudarc/issues/529')[0])[0]
    assert rust.title == "cudarc (Rust) found cuDNN under none of the names it tries"
    fix = next(f for f in rust.fixes if f.id == "install-matching-cudnn")
    assert "libcudnn.so.9" in fix.action and "tensorflow" not in fix.action
    build = _top(log=_row(BINDINGS, 'darknet/issues/4445')[1])[0]  # /usr/bin/ld: cannot find -lcudnn
    assert build.title == "The linker found no cuDNN library to link (cudnn)" and "LIBRARY_PATH" in build.summary
    assert "CPATH" in build.fixes[0].action and "jax" not in build.fixes[0].action
    api = _top(log=_row(BINDINGS, 'caffe/issues/6970')[1])[0]  # Caffe against cuDNN 8
    assert api.id == "cudnn-version-mismatch" and "_SPECIFY_WORKSPACE_LIMIT, which the cudnn.h" in api.title


def test_julia_names_the_file_a_sub_library_or_the_main_one():
    main = _top(exc=_row(BINDINGS, 'Flux.jl/issues/1116')[0])[0]
    assert main.id == "cudnn-library-not-found" and main.versions["soname"] == "cudnn64_7.dll"
    assert main.title == "Julia could not load cudnn64_7.dll"
    sub = _top(exc=_row(BINDINGS, 'CUDA.jl/issues/1291')[0])[0]
    assert sub.id == "cudnn-sublibrary-load-failed" and sub.versions["soname"] == "cudnn_cnn_infer64_8.dll"


def test_dlib_status_numbers_and_the_failing_call_decide():
    init = _top(exc=_row(BINDINGS, 'dlib/issues/1772')[0])
    assert [d.id for d in init][:2] == ["cudnn-init-failed", "cudnn-internal-error"]  # cudnnCreate returned 4
    assert init[0].versions["call"] == "cudnnCreate" and init[0].versions["status"] == "CUDNN_STATUS_INTERNAL_ERROR"
    # the status is the number's, whatever dlib's own reason string says
    assert _top(exc=_row(BINDINGS, 'dlib/issues/2330')[0])[0].versions["status"] == "CUDNN_STATUS_NOT_SUPPORTED"


def test_an_install_note_outranks_the_vaguer_failure_after_it():
    paddle = _top(*_row(INSTALL_NOTES, 'the next cuDNN call)')[:2])
    assert paddle[0].id == "cudnn-library-not-found" and "cudnn-init-failed" in [d.id for d in paddle]
    assert paddle[0].title.startswith("PaddlePaddle could not load cuDNN")
    nvrtc = _top(*_row(INSTALL_NOTES, 'then fails')[:2])
    assert [d.id for d in nvrtc][:2] == ["cudnn-sublibrary-load-failed", "cudnn-unsupported-config"]
    fix = nvrtc[0].fixes[0]
    assert fix.id == "install-cudnn-deps" and "ln -s libnvrtc.so.<version> libnvrtc.so" in fix.action
    assert not fix.applicable  # the CUDA wheel already ships NVRTC: pip would change nothing


def test_an_unnamed_dll_failure_never_claims_cudnn_from_the_text():
    d = _top(exc=_row(UNNAMED_DLL, 'dlib/issues/2079')[0])
    assert [x.id for x in d] == ["unnamed-library-load-failed"]
    assert d[0].title == "Windows could not load a DLL that dlib needs (the message does not say which)"
    assert "cudnn-magic explain --facts" in d[0].summary and "os.add_dll_directory" in d[0].summary
    assert d[0].versions["module"] == "dlib"
    # a cuDNN DLL named anywhere decides
    named = 'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\t\\lib\\cudnn_adv_infer64_8.dll" or one of its dependencies.'
    assert [x.id for x in _top(exc=named)] == ["cudnn-sublibrary-load-failed"]
    assert next(x.id for x in _top(exc=_row(UNNAMED_DLL, 'dlib/issues/1954')[0], log=_row(INSTALL_NOTES, 'preload_check')[1])) == "cudnn-library-not-found"


def test_jax_without_its_plugin_is_a_cpu_build_unless_the_plugin_failed():
    from cudnn_magic.engines.diagnose import gpu_unused_warnings

    alone = "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu."
    assert [d.id for d in gpu_unused_warnings(alone)] == ["framework-cpu-build"]
    failed = alone + "\nCUDA backend failed to initialize: Unable to load cuPTI. Is it installed?"
    assert gpu_unused_warnings(failed) == []  # the plugin is installed: its failure is not cuDNN's
    assert _top(exc=_row(CPU_BUILDS, 'dynalang/issues/6')[0])[0].id == "framework-cpu-build"


@pytest.mark.parametrize("row, framework, command", [
    (_row(CPU_BUILDS, 'MobileAgent/issues/60'), "PyTorch", "--index-url https://download.pytorch.org/whl/cu118"),  # nvidia-smi: CUDA 11.4
    (_row(CPU_BUILDS, 'collect_env.py of a +cpu wheel'), "PyTorch", '"torch==2.1.0" --index-url https://download.pytorch.org/whl/cu121'),  # the +cpu version
    (_row(CPU_BUILDS, 'dreamerv3/issues/18'), "JAX", 'pip install -U "jax[cuda12]"'),  # nvidia-smi: CUDA 12.0
    (_row(CPU_BUILDS, 'sunone_aimbot/issues/195'), "ONNX Runtime", "python -m pip uninstall -y onnxruntime && python -m pip install onnxruntime-gpu"),
    (_row(CPU_BUILDS, 'PARL/issues/929'), "PaddlePaddle", "python -m pip install paddlepaddle-gpu"),
])
def test_a_cpu_build_gets_the_cuda_build_of_its_framework(row, framework, command):
    d = _top(row[0], row[1], row[2])[0]
    assert d.id == "framework-cpu-build"
    fix = d.fixes[0]
    assert fix.id == "install-cudnn-build" and command in fix.action, fix.action
    assert not fix.applicable and fix.restart_required


def test_tensorflow_on_native_windows_and_ctranslate2_on_macos_have_no_cuda_build_to_offer():
    mac = _top(*_row(CPU_BUILDS, 'faster-whisper)')[:3])[0]  # faster-whisper under /Users/
    assert mac.id == "framework-cpu-build" and mac.fixes == ()
    tf = _top(_row(CPU_BUILDS, 'tensorflow/issues/8093')[0])[0]
    assert "tensorflow[and-cuda]" in tf.fixes[0].action and "native Windows" in tf.fixes[0].action


# --------------------------------------------------------------------------- joined with the live facts


def _report(cr, **kw):
    """A Report from the consumer check's real search (what %cudnn_check and explain --facts hold)."""
    from cudnn_magic.model import Report

    return Report(frameworks=tuple(cr.frameworks), consumers=tuple(cr.consumers), findings=tuple(cr.findings),
                  resolutions=tuple(cr.resolutions), **kw)


DLL_FAILED = "ImportError: DLL load failed while importing libpaddle: The specified module could not be found."


def test_an_unnamed_dll_failure_with_the_live_search_says_whether_cudnn_is_missing(tmp_path):
    """PaddlePaddle 2.6.2's real version file and a stand-in libpaddle.so (gcc): the consumer check's
    own search (glibc's order) finds no libcudnn.so, so cuDNN is what the unnamed failure misses;
    with a stand-in cuDNN 8.9.7 on LD_LIBRARY_PATH it finds one, and no cuDNN claim is made."""
    from cudnn_magic.engines.consumer_check import check_consumers
    from helpers.consumer_standins import PADDLE_262, cudnn_standin_dir, paddle_site

    site = paddle_site(tmp_path, PADDLE_262, "paddlepaddle-gpu", "2.6.2")
    missing = _report(check_consumers(paths=[str(site)], conda=False, environ={"LD_LIBRARY_PATH": ""}, ldcache={}))
    res = diagnose(exception=DLL_FAILED, report=missing)
    assert [d.id for d in res][:2] == ["cudnn-library-not-found", "unnamed-library-load-failed"]
    assert res[0].title == "The library that failed to load is cuDNN: PaddlePaddle 2.6.2 will find no libcudnn.so"
    assert any(e.startswith("fact: PaddlePaddle 2.6.2 will find no libcudnn.so.") for e in res[0].evidence)

    cudnn = cudnn_standin_dir(tmp_path, "cudnn", "8.9.7", 8)
    found = _report(check_consumers(paths=[str(site)], conda=False, environ={"LD_LIBRARY_PATH": str(cudnn)}, ldcache={}))
    res = diagnose(exception=DLL_FAILED, report=found)
    assert [d.id for d in res] == ["unnamed-library-load-failed"]
    fact = next(e for e in res[0].evidence if e.startswith("fact: every cuDNN consumer here finds its cuDNN"))
    assert str(cudnn) in fact and "not cuDNN" in fact
    assert [d.id for d in diagnose(exception=DLL_FAILED)] == ["unnamed-library-load-failed"]  # no facts: no claim


def _torch_cpu_row(tmp_path):
    """PyTorch's row as the probe reads it from the real +cpu wheel's files."""
    from helpers.framework_files import local_wheel, probe_one, unpack

    unpack(local_wheel("torch-*+cpu-*.whl"), tmp_path, [r"torch/version\.py", r"torch/__init__\.py"])
    return probe_one(tmp_path, "PyTorch")[0]


def test_a_cpu_build_with_the_live_facts(tmp_path):
    import dataclasses

    from cudnn_magic.model import Driver, Gpu, Report, Unavailable

    row = _torch_cpu_row(tmp_path)
    assert row.cpu_build
    release = row.version.split("+")[0]
    exc = "AssertionError: Torch not compiled with CUDA enabled"
    gpu = Report(frameworks=(row,), gpus=(Gpu(0, "NVIDIA H200", compute_capability=(9, 0)),),
                 driver=Driver("550.54.15", cuda_driver_version="12.4"), platform="linux")
    d = _top(exc=exc, report=gpu)[0]
    assert d.id == "framework-cpu-build"
    assert f"fact: PyTorch {row.version} here is a CPU-only build" in "\n".join(d.evidence)
    assert "fact: NVIDIA driver 550.54.15 supports CUDA 12.4; GPU 0: NVIDIA H200" in d.evidence
    fix = d.fixes[0]
    assert fix.title == "Install the CUDA build of PyTorch for CUDA 12"
    assert fix.action.startswith(f'python -m pip install --force-reinstall "torch=={release}" --index-url '
                                 "https://download.pytorch.org/whl/cu12")
    # no NVIDIA GPU or driver here: a CUDA build would not use one either, so none is offered
    none = Report(frameworks=(row,), driver=Unavailable("NVML not found: libnvidia-ml.so.1: cannot open"))
    d = _top(exc=exc, report=none)[0]
    assert d.id == "framework-cpu-build" and d.fixes == ()
    assert any(e.startswith("fact: no NVIDIA GPU or driver on this machine (NVML not found)") for e in d.evidence)
    # this environment's PyTorch is a CUDA build: the message came from elsewhere; nothing to install
    cuda_row = dataclasses.replace(row, cpu_build=False, cuda_compiled="12.8", version=release + "+cu128")
    d = _top(exc=exc, report=dataclasses.replace(gpu, frameworks=(cuda_row,)))[0]
    assert d.fixes == () and any(e.startswith(f"note: PyTorch {release}+cu128 in this environment is a CUDA build")
                                 for e in d.evidence)


def test_the_check_and_the_diagnosis_name_the_same_cuda_build(tmp_path):
    from cudnn_magic.engines.check import judge_report
    from cudnn_magic.model import Driver, Gpu

    row = _torch_cpu_row(tmp_path)
    gpus, driver = (Gpu(0, "NVIDIA H200", compute_capability=(9, 0)),), Driver("550.54.15", cuda_driver_version="12.4")
    rep = judge_report(loaded=(), installed=(), frameworks=(row,), driver=driver, gpus=gpus)
    finding = next(f for f in rep.findings if f.id == "framework-cpu-build")
    d = _top(exc="AssertionError: Torch not compiled with CUDA enabled", report=rep)[0]
    assert d.id == finding.id
    command = finding.fixes[0].action.split("   #")[0]
    assert command.startswith("python -m pip install --force-reinstall") and d.fixes[0].action.startswith(command)


@pytest.mark.parametrize("framework, version, cuda, platform, command", [
    ("PyTorch", "2.1.0+cpu", "12.2", "linux", '"torch==2.1.0" --index-url https://download.pytorch.org/whl/cu121'),
    ("PyTorch", "2.7.1", "11.4", "win32", '"torch==2.7.1" --index-url https://download.pytorch.org/whl/cu118'),
    ("PyTorch", None, "11.4", "linux", '"torch" --index-url https://download.pytorch.org/whl/cu118'),  # newest for CUDA 11
    ("PyTorch", "2.9.0", "13.0", "linux", "https://download.pytorch.org/whl/cu130"),
    ("JAX", "0.7.2", "13.0", "linux", 'pip install -U "jax[cuda13]"'),
    ("JAX", None, "11.8", "linux", '"jax[cuda11_pip]==0.4.25"'),
    ("ONNX Runtime", "1.18.0", "11.8", "linux", "pip install onnxruntime-gpu==1.18.0"),
    ("ONNX Runtime", "1.20.0", "11.8", "linux", "_packaging/onnxruntime-cuda-11/pypi/simple/"),
    ("TensorFlow", "2.15.0", "12.2", "linux", 'pip install "tensorflow[and-cuda]==2.15.0"'),
    ("TensorFlow", "2.15.0", "12.2", "win32", ""),
    ("PyTorch", "2.0.1", None, "darwin", ""),
    ("PaddlePaddle", "3.0.0", "12.4", "linux", "https://www.paddlepaddle.org.cn/packages/stable/cu126/"),
])
def test_the_cuda_build_for_each_framework_and_cuda_major(framework, version, cuda, platform, command):
    from cudnn_magic.rules.gpu_builds import gpu_build

    build = gpu_build(framework, version, cuda, platform)
    assert (command in build.command) if command else build.command == "", build
    assert build.note


def test_explain_facts_joins_an_unnamed_dll_failure_from_the_command_line(tmp_path):
    """`cudnn-magic explain --facts` in an environment holding PaddlePaddle 2.6.2 (its real version
    file, a stand-in libpaddle.so): without a cuDNN the pasted bare failure is cuDNN's; with a
    stand-in cuDNN 8.9.7 on LD_LIBRARY_PATH it is not, and without --facts nothing is claimed."""
    import json
    import os
    import subprocess
    import sys

    from helpers.consumer_standins import PADDLE_262, cudnn_standin_dir, paddle_site

    site = paddle_site(tmp_path, PADDLE_262, "paddlepaddle-gpu", "2.6.2")
    log = tmp_path / "pasted.txt"
    log.write_text(DLL_FAILED + "\n")

    def explain(*flags: str, ld: str = "") -> list[dict]:
        env = dict(os.environ, PYTHONPATH=str(site), LD_LIBRARY_PATH=ld)
        p = subprocess.run([sys.executable, "-m", "cudnn_magic", "explain", "--json", *flags, str(log)],
                           capture_output=True, text=True, env=env, timeout=240)
        assert p.returncode == 0, p.stderr[-2000:]
        return json.loads(p.stdout)["diagnoses"]

    got = explain("--facts")
    assert [d["id"] for d in got] == ["cudnn-library-not-found", "unnamed-library-load-failed"]
    assert got[0]["title"] == "The library that failed to load is cuDNN: PaddlePaddle 2.6.2 will find no libcudnn.so"
    assert [d["id"] for d in explain()] == ["unnamed-library-load-failed"]
    found = explain("--facts", ld=str(cudnn_standin_dir(tmp_path, "cudnn", "8.9.7", 8)))
    assert [d["id"] for d in found] == ["unnamed-library-load-failed"]
    assert any(e.startswith("fact: every cuDNN consumer here finds its cuDNN") for e in found[0]["evidence"])
