"""More wordings of each kind, across eras and frameworks, beyond the shared corpus: each gets
an accepted id first, and the non-cuDNN ones get no ``cudnn-*`` id. Wordings are the ones real
tools print (TensorFlow cuda_dnn.cc/dso_loader.cc, PyTorch ATen, JAX, CuPy, MXNet, Caffe,
Darknet, OpenCV DNN, PaddlePaddle, ONNX Runtime, CTranslate2, Windows DLL names).

Each row: (exception text, native log text, accepted ids separated by "|"; "NONE" = no
cudnn-* id may be claimed; "ANY" = only that nothing raises).
"""

from __future__ import annotations

import pytest

from cudnn_magic.engines.diagnose import diagnose

CASES = [
 ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "", "cudnn-init-failed"),
 ("RuntimeError: CUDNN_STATUS_MAPPING_ERROR", "", "tensors-on-different-devices"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", "", "cudnn-execution-failed"),
 ("tensorflow.python.framework.errors_impl.UnknownError: Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, so try looking to see if a warning log message was printed above. [Op:Conv2D]", "", "cudnn-init-failed"),
 ("", "2020-01-01 E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED", "gpu-out-of-memory"),
 ("RuntimeError: Unable to find a valid cuDNN algorithm to run convolution", "", "cudnn-unsupported-config"),
 ("jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed. Look at the errors above for more details.", "", "cudnn-init-failed"),
 ("", "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory\nPlease make sure libcudnn_ops_infer.so.8 is in your library path!\nAborted (core dumped)", "cudnn-sublibrary-load-failed|cudnn-library-not-found"),
 ("OSError: libcudnn.so.8: cannot open shared object file: No such file or directory", "", "cudnn-library-not-found"),
 ("", "W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory", "cudnn-library-not-found"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM", "", "cudnn-bad-param"),
 ("RuntimeError: cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED", "", "cudnn-unsupported-config"),
 ("RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.", "", "cudnn-unsupported-config"),
 ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity; 6.50 GiB already allocated)", "", "gpu-out-of-memory|NONE"),
 ("RuntimeError: CUDA error: an illegal memory access was encountered", "", "NONE"),
 ("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found runtime version (8, 9, 2). PyTorch already comes bundled with cuDNN.", "", "cudnn-version-mismatch"),
 ("ImportError: /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: cudnnGetLibConfig", "", "cudnn-version-mismatch|cudnn-sublibrary-load-failed"),
 ("", "2023-03-01 E tensorflow/compiler/xla/stream_executor/cuda/cuda_dnn.cc:417] Loaded runtime CuDNN library: 8.1.0 but source was compiled with: 8.6.0.  CuDNN library needs to have matching major version and equal or higher minor version. If using a binary install, upgrade your CuDNN library.", "cudnn-version-mismatch"),
 ("mxnet.base.MXNetError: [10:45:00] src/operator/nn/./cudnn/cudnn_convolution-inl.h:156: Check failed: e == CUDNN_STATUS_SUCCESS (4 vs. 0) cuDNN: CUDNN_STATUS_INTERNAL_ERROR", "", "cudnn-internal-error|cudnn-init-failed"),
 ("cupy.cuda.cudnn.CuDNNError: CUDNN_STATUS_NOT_INITIALIZED: b'CUDNN_STATUS_NOT_INITIALIZED'", "", "cudnn-init-failed"),
 ("", "[E:onnxruntime:Default, provider_bridge_ort.cc:1862 TryGetProviderInfo_CUDA] /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1539 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn_adv.so.9: cannot open shared object file: No such file or directory", "cudnn-sublibrary-load-failed|cudnn-library-not-found"),
 ("", "Could not load symbol cudnnGetLibConfig. Error: /usr/lib/x86_64-linux-gnu/libcudnn_graph.so.9: undefined symbol: cudnnGetLibConfig", "cudnn-sublibrary-load-failed"),
 ("", "W tensorflow/core/common_runtime/gpu/gpu_device.cc:2211] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the required libraries for your platform.\nSkipping registering GPU devices...", "cudnn-library-not-found"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER", "", "cuda-driver-too-old"),
 ("", "E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:9261] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered", "NONE"),
 ("", "E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\nE tensorflow/stream_executor/cuda/cuda_dnn.cc:337] possibly insufficient driver version: 418.67.0", "cuda-driver-too-old|cudnn-init-failed"),
 ("OSError: (External) CUDNN error(7), CUDNN_STATUS_MAPPING_ERROR. \n  [Hint: 'CUDNN_STATUS_MAPPING_ERROR'.  An access to GPU memory space failed", "", "tensors-on-different-devices|cudnn-execution-failed"),
 ("RuntimeError: CUDNN_STATUS_ARCH_MISMATCH", "", "gpu-arch-unsupported"),
 ("", "F tensorflow/stream_executor/cuda/cuda_dnn.cc:213] Check failed: status == CUDNN_STATUS_SUCCESS (4 vs. 0)", "cudnn-internal-error|cudnn-init-failed"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR\nYou can try to repro this exception using the following code snippet.", "", "cudnn-internal-error"),
 ("ValueError: operands could not be broadcast together with shapes (3,) (4,)", "", "NONE"),
 ("AttributeError: module 'torch.backends.cudnn' has no attribute 'benchmarks'", "", "NONE"),
 ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`", "", "NONE"),
 ("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!", "", "NONE|tensors-on-different-devices"),
 ("", "2024-05-01 12:00:00.123456: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:535] Loaded runtime CuDNN library: 8.9.4 but source was compiled with: 8.9.6.  CuDNN library needs to have matching major version and equal or higher minor version.", "cudnn-version-mismatch"),
 ("", "E0000 00:00:1735689600.123456   12345 cuda_dnn.cc:522] Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.3.0.  CuDNN library needs to have matching major version and equal or higher minor version.", "cudnn-version-mismatch"),
 ("RuntimeError: Outdated cuDNN installation found.\nVersion JAX was built against: 8906\nMinimum supported: 8900\nInstalled version: 8600\nThe local installation version must be no lower than 8900.", "", "cudnn-version-mismatch"),
 ("UnknownError:  Fail to find the dnn implementation.\n\t [[{{node CudnnRNN}}]]", "", "cudnn-init-failed"),
 ("tensorflow.python.framework.errors_impl.NotFoundError: No algorithm worked!  Error messages:\n  Profiling failure on CUDNN engine 1#TC: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1073741824 bytes.", "", "gpu-out-of-memory"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", "", "cudnn-sublibrary-load-failed"),
 ("", "Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!", "cudnn-sublibrary-load-failed|cudnn-library-not-found"),
 ("", "Could not locate zlibwapi.dll. Please make sure it is in your library path!", "cudnn-sublibrary-load-failed"),
 ("", "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'cudnn64_8.dll'; dlerror: cudnn64_8.dll not found", "cudnn-library-not-found"),
 ("RuntimeError: GET was unable to find an engine to execute this computation", "", "cudnn-unsupported-config"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.", "", "cudnn-unsupported-config"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED", "", "gpu-out-of-memory"),
 ("", "cuDNN status 3000 in cudnnBackendFinalize", "cudnn-unsupported-config"),
 ("RuntimeError: cuDNN error: CUDNN_STAT\nUS_INTERNAL_ERROR", "", "cudnn-internal-error"),
 ("RuntimeError: cuDNN version 90100 is not compatible with devices with SM < 7.5 (your device has compute capability 6.1)", "", "gpu-arch-unsupported"),
 ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "", "NONE|gpu-arch-unsupported"),
 ("", "Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, libcudnn_cnn.so}\nInvalid handle. Cannot load symbol cudnnCreateConvolutionDescriptor\nAborted (core dumped)", "cudnn-sublibrary-load-failed"),

 ("", "E tensorflow/stream_executor/cuda/cuda_dnn.cc:378] Loaded runtime CuDNN library: 7.0.5 but source was compiled with: 7.1.4.  CuDNN library major and minor version needs to match or have higher minor version in case of CuDNN 7.0 or later version.", "cudnn-version-mismatch"),
 ("", "I tensorflow/stream_executor/dso_loader.cc:126] Couldn't open CUDA library libcudnn.so. LD_LIBRARY_PATH: /usr/local/cuda/lib64\nI tensorflow/stream_executor/cuda/cuda_dnn.cc:3517] Unable to load cuDNN DSO", "cudnn-library-not-found"),
 ("", "F1201 caffe/src/caffe/layers/cudnn_conv_layer.cpp:53] Check failed: status == CUDNN_STATUS_SUCCESS (1 vs. 0)  CUDNN_STATUS_NOT_INITIALIZED", "cudnn-init-failed"),
 ("", "F1201 caffe/src/caffe/syncedmem.cpp:56] Check failed: error == cudaSuccess (2 vs. 0)  out of memory", "NONE|gpu-out-of-memory"),
 ("", "cuDNN status Error in: file: ./src/convolutional_layer.c : () : line: 542 : build time: Jan 1 2021 - 00:00:00 \n\n cuDNN Error: CUDNN_STATUS_BAD_PARAM", "cudnn-bad-param"),
 ("cv2.error: OpenCV(4.5.2) /tmp/opencv/modules/dnn/src/cuda4dnn/csl/cudnn/convolution.hpp:461: error: (-217:Gpu API call) CUDNN_STATUS_EXECUTION_FAILED in function 'convolve'", "", "cudnn-execution-failed"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_VERSION_MISMATCH", "", "cudnn-version-mismatch|cudnn-sublibrary-load-failed"),
 ("RuntimeError: cuDNN failed with status CUDNN_STATUS_EXECUTION_FAILED", "", "cudnn-execution-failed"),
 ("tensorflow.python.framework.errors_impl.InternalError: DNN library is not found.", "", "cudnn-init-failed|cudnn-library-not-found"),
 ("", "E0000 00:00:1700000000.000000 4242 cuda_dnn.cc:535] Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED\nE0000 00:00:1700000000.000000 4242 cuda_dnn.cc:539] Memory usage: 2359296 bytes free, 25435766784 bytes total.", "gpu-out-of-memory"),
 ("", "E tensorflow/stream_executor/cuda/cuda_dnn.cc:82] CUDNN_STATUS_INTERNAL_ERROR\nin tensorflow/stream_executor/cuda/cuda_dnn.cc(1921): 'cudnnRNNBackwardData( cudnn.handle(), rnn_desc.handle(), ...'", "cudnn-internal-error|cudnn-execution-failed"),
 ("", "W tensorflow/stream_executor/platform/default/dso_loader.cc:60] Could not load dynamic library 'cudnn64_7.dll'; dlerror: cudnn64_7.dll not found", "cudnn-library-not-found"),
 ("RuntimeError: CUDNN_STATUS_EXECUTION_FAILED", "", "cudnn-execution-failed"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", "", "cudnn-internal-error"),
 ("RuntimeError: cudnn RNN backward can only be called in training mode", "", "ANY"),
 ("InternalError: Failed to call ThenRnnForward with model config: [rnn_mode, rnn_input_mode, rnn_direction_mode]: 2, 0, 0 , [num_layers, input_size, num_units, dir_count, max_seq_length, batch_size, cell_num_units]: [1, 64, 64, 1, 100, 32, 64]  [[{{node CudnnRNN}}]]", "", "cudnn-execution-failed|cudnn-init-failed|cudnn-internal-error|gpu-out-of-memory"),
 ("", "2021-06-01 E tensorflow/stream_executor/cuda/cuda_driver.cc:1010] failed to synchronize the stop event: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure\nF tensorflow/stream_executor/cuda/cuda_dnn.cc:194] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.", "cudnn-stream-set-failed"),
 ("UnimplementedError: DNN library is not found.", "", "cudnn-init-failed|cudnn-library-not-found"),
 ("", "2022-01-01 W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file: No such file or directory; LD_LIBRARY_PATH: /usr/local/nvidia/lib:/usr/local/nvidia/lib64", "cudnn-library-not-found"),
 ("Exception: cudnn64_8.dll not found. Please install cuDNN.", "", "cudnn-library-not-found"),
 ("", "Could not load library cudnn_cnn_infer64_8.dll. Error code 193\nPlease make sure cudnn_cnn_infer64_8.dll is in your library path!", "cudnn-sublibrary-load-failed"),
 ("RuntimeError: CUDNN_STATUS_NOT_INITIALIZED", "", "cudnn-init-failed"),
 ("Error: CUDNN_STATUS_RUNTIME_PREREQUISITE_MISSING", "", "cudnn-sublibrary-load-failed|cudnn-init-failed|cudnn-library-not-found"),
 ("ExternalError: CUDNN error(1), CUDNN_STATUS_NOT_INITIALIZED.", "", "cudnn-init-failed"),
 ("", "W paddle/fluid/platform/dynload/dynamic_loader.cc:307] The third-party dynamic library (libcudnn.so) that Paddle depends on is not configured correctly. (error code is libcudnn.so: cannot open shared object file: No such file or directory)", "cudnn-library-not-found"),
 ("", "E0000 00:00:1728000000.000000   1234 cuda_dnn.cc:8310] Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered\nE0000 00:00:1728000000.000000   1234 cuda_blas.cc:1418] Unable to register cuBLAS factory", "NONE"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR", "", "tensors-on-different-devices"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH", "", "gpu-arch-unsupported"),
 ("", "jax._src.xla_bridge: CUDA backend failed to initialize: Found cuDNN version 8700, but JAX was built against version 8800, which is newer. The copy of cuDNN that is installed must be at least as new as the version against which JAX was built. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)", "cudnn-version-mismatch"),
 ("RuntimeError: Found cuDNN version 8600, but JAX was built against version 8800, which is newer.", "", "cudnn-version-mismatch"),

 ("", "E tensorflow/stream_executor/cuda/cuda_dnn.cc:396] Loaded runtime CuDNN library: 7104 (compatibility version 7100) but source was compiled with 7005 (compatibility version 7000).  If using a binary install, upgrade your CuDNN library to match.", "cudnn-version-mismatch"),
 ("", "E tensorflow/stream_executor/cuda/cuda_dnn.cc:343] Loaded runtime CuDNN library: 6021 (compatibility version 6000) but source was compiled with 7003 (compatibility version 7000).", "cudnn-version-mismatch"),
 ("", "F tensorflow/stream_executor/cuda/cuda_dnn.cc:224] Check failed: status == CUDNN_STATUS_SUCCESS (3 vs. 0)Failed to set cuDNN stream.", "cudnn-stream-set-failed"),
 ("", "E tensorflow/stream_executor/cuda/cuda_event.cc:29] Error polling for event status: failed to query event: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered\nF tensorflow/core/common_runtime/gpu/gpu_event_mgr.cc:273] Unexpected Event status: 1\nF external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_dnn.cc:217] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.", "cudnn-stream-set-failed"),
 ("", "2020-05-01 E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n2020-05-01 E tensorflow/stream_executor/cuda/cuda_dnn.cc:333] Possibly insufficient driver version: 396.54.0", "cuda-driver-too-old|cudnn-init-failed"),
 ("", "W tensorflow/stream_executor/cuda/cuda_driver.cc:326] failed call to cuInit: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: forward compatibility was attempted on non supported HW", "NONE|cuda-driver-too-old"),
 ("RuntimeError: The NVIDIA driver on your system is too old (found version 10010). Please update your GPU driver", "", "NONE|cuda-driver-too-old"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED\nYou can try to repro this exception using the following code snippet. If that doesn't trigger the error, please include your original repro script when reporting this issue.\n\nimport torch\ntorch.backends.cuda.matmul.allow_tf32 = True", "", "cudnn-execution-failed"),
 ("RuntimeError: CUDNN_STATUS_INTERNAL_ERROR", "", "cudnn-internal-error"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH", "", "gpu-arch-unsupported"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER", "", "cudnn-execution-failed|cuda-driver-too-old"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED", "", "gpu-out-of-memory"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM_NULL_POINTER", "", "cudnn-bad-param"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", "", "cudnn-sublibrary-load-failed"),
 ("", "cudnn_status: 3007 (CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)", "gpu-arch-unsupported"),
 ("", "Could not load library libcudnn_cnn_train.so.8. Error: /usr/local/cuda/lib64/libcudnn_cnn_train.so.8: undefined symbol: _ZN5cudnn3cnn34layerNormFwd_execute_internal_implERKNS_7backend11VariantPackEP11CUstream_stRKNS0_18LayerNormFwdParamsERKNS1_20NormForwardOperationEmb, version libcudnn_cnn_infer.so.8", "cudnn-sublibrary-load-failed"),
 ("ImportError: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory", "", "cudnn-sublibrary-load-failed|cudnn-library-not-found"),
 ("OSError: /usr/local/lib/python3.10/dist-packages/torch/lib/../../nvidia/cudnn/lib/libcudnn_cnn_infer.so.8: undefined symbol: _ZN11nvrtcHelper4loadEb, version libcudnn_ops_infer.so.8", "", "cudnn-sublibrary-load-failed"),
 ("", "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object file: No such file or directory\nAborted (core dumped)", "cudnn-sublibrary-load-failed"),
 ("", "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install all dependencies as mentioned in the GPU requirements page (https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements), make sure they're in the PATH, and that your GPU is supported.", "cudnn-library-not-found|cudnn-version-mismatch"),
 ("", "2024-01-01 W tensorflow/core/common_runtime/gpu/gpu_device.cc:2256] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU.", "cudnn-library-not-found"),
 ("RuntimeError: Unable to load cuDNN. Is it installed?", "", "cudnn-library-not-found"),
 ("", "W external/xla/xla/service/gpu/nvptx_compiler.cc:744] The NVIDIA driver's CUDA version is 12.2 which is older than the ptxas CUDA version (12.4.131). Because the driver is older than the ptxas version, XLA is disabling parallel compilation", "NONE"),
 ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: RET_CHECK failure (external/xla/xla/service/gpu/runtime/cudnn_thunk.cc:48) status.ok() cuDNN graph failed", "", "ANY"),
 ("XlaRuntimeError: UNKNOWN: Failed to determine best cudnn convolution algorithm for:\n%cudnn-conv = (f32[1,64,64,64]{...}) custom-call(...)\nOriginal error: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2147483648 bytes.", "", "gpu-out-of-memory"),
 ("", "E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:439] Loaded runtime CuDNN library: 8.6.0 but source was compiled with: 8.8.0.  CuDNN library needs to have matching major version and equal or higher minor version. If using a binary install, upgrade your CuDNN library.  If building from sources, make sure the library loaded at runtime is compatible with the version specified during compile configuration.\nE external/xla/xla/stream_executor/cuda/cuda_dnn.cc:443] Memory usage: 30081024 bytes free, 8361017344 bytes total.", "cudnn-version-mismatch"),
 ("", "E0811 09:52:13.180384 cuda_dnn.cc:522] Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.3.0.  CuDNN library needs to have matching major version and equal or higher minor version. If using a binary install, upgrade your CuDNN library.  If building from sources, make sure the library loaded at runtime is compatible with the version specified during compile configuration.", "cudnn-version-mismatch"),
 ("RuntimeError: CuDNN error: CUDNN_STATUS_SUCCESS", "", "cudnn-init-failed|cudnn-version-mismatch|cudnn-internal-error"),
 ("cupy_backends.cuda.libs.cudnn.CuDNNError: CUDNN_STATUS_BAD_PARAM: b'CUDNN_STATUS_BAD_PARAM'", "", "cudnn-bad-param"),
 ("chainer.backends.cuda... CuDNNError: CUDNN_STATUS_MAPPING_ERROR: b'CUDNN_STATUS_MAPPING_ERROR'", "", "tensors-on-different-devices"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED (while running torch.nn.functional.conv2d)", "", "cudnn-init-failed"),
 ("Error: cudnn64_9.dll not found", "", "cudnn-library-not-found"),
 ("", "Could not locate cudnn_ops64_9.dll. Please make sure it is in your library path!\nInvalid handle. Cannot load symbol cudnnCreateTensorDescriptor", "cudnn-sublibrary-load-failed"),
 ("OSError: [WinError 126] The specified module could not be found. Error loading \"C:\\Python310\\lib\\site-packages\\torch\\lib\\cudnn_adv_infer64_8.dll\" or one of its dependencies.", "", "cudnn-sublibrary-load-failed|cudnn-library-not-found"),
 ("", "2021-03-03 I tensorflow/stream_executor/platform/default/dso_loader.cc:49] Successfully opened dynamic library libcudnn.so.8\n2021-03-03 I tensorflow/core/common_runtime/gpu/gpu_device.cc:1862] Adding visible gpu devices: 0", "NONE"),
 ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[64,256,56,56] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc", "", "NONE|gpu-out-of-memory"),
 ("RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED\nCUDA out of memory", "", "gpu-out-of-memory"),
]


@pytest.mark.parametrize("exc, log, want", CASES, ids=[f"{i:02d}" for i in range(len(CASES))])
def test_wording_family(exc, log, want):
    ids = [d.id for d in diagnose(exception=exc, log=log)]
    if want == "ANY":
        return
    accepted = want.split("|")
    first = ids[0] if ids else "NONE"
    assert first in accepted, (ids, exc or log)
    if "NONE" in accepted:
        assert not any(i.startswith("cudnn-") for i in ids), ids
