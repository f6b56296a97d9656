"""Real reports, table per kind: each row is a real wording from a public issue thread (or, marked
``wording:``, the exact text a framework's source prints), the ids accepted for it (first must be
one of them; "NONE" = no ``cudnn-*`` id may be claimed), and where it comes from. Grown for issue 17
("diagnoses that hold on reports nobody here has seen"): the failing call decides what a status
means, the missing library is named, builds without cuDNN, architecture errors on cuDNN paths,
undefined cuDNN symbols, cuDNN's frontend/graph API and empty convolution algorithm searches, each
with nearby real non-cuDNN errors that must stay without a cuDNN claim.

Every row is checked twice: as the three fields a cell gives (exception, native log, traceback)
and pasted as one log (``cudnn-magic explain``).

Rows: (exception, native log, traceback, accepted ids separated by "|", source).
"""

from __future__ import annotations

import pytest

from cudnn_magic.diagnose import diagnose

#: The failing call decides what a status means (ORT expr=, PyTorch/CuPy/Caffe/Lua frames).
CALLS = [
    ('',
     '2023-07-26 17:04:50.4252918 [E:onnxruntime:test, cuda_call.cc:119 onnxruntime::CudaCall] CUDNN failure 4: CUDNN_STATUS_INTERNAL_ERROR ; GPU=0 ; hostname=MSI ; expr=cudnnFindConvolutionForwardAlgorithmEx( GetCudnnHandle(context), s_.x_tensor, s_.x_data, s_.w_desc, s_.w_data, s_.conv_desc, s_.y_tensor, s_.y_data, 1, &algo_count, &perf, algo_search_workspace.get(), max_ws_size);',
     '',
     'cudnn-internal-error|gpu-out-of-memory',
     'https://github.com/dinglufe/segment-anything-cpp-wrapper/issues/21'),
    ('Ort::Exception: /onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc:121 std::conditional_t<THRW, void, onnxruntime::common::Status> onnxruntime::CudaCall(ERRTYPE, const char*, const char*, ERRTYPE, const char*, const char*, int) [with ERRTYPE = cudnnStatus_t; bool THRW = true; std::conditional_t<THRW, void, onnxruntime::common::Status> = void] CUDNN failure 1: CUDNN_STATUS_NOT_INITIALIZED ; GPU=0 ; hostname=divyansh-moon ; file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_stream_handle.cc ; line=52 ; expr=cudnnCreate(&cudnn_handle_); ',
     '',
     '',
     'cudnn-init-failed',
     'https://github.com/microsoft/onnxruntime/issues/17337'),
    ('',
     '2025-10-16 16:21:28.9834100 [E:onnxruntime:, inference_session.cc:2281 onnxruntime::InferenceSession::Initialize::<lambda_e8d4d0becbc932a2a695dabef1c08374>::operator ()] Exception during initialization: D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_call.cc:129 onnxruntime::CudaCall D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_call.cc:121 onnxruntime::CudaCall CUDNN failure 1001: CUDNN_STATUS_NOT_INITIALIZED ; GPU=0 ; hostname=PC-5CG50729R0 ; file=D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_execution_provider.cc ; line=182 ; expr=cudnnCreate(&cudnn_handle_);',
     '',
     'cudnn-init-failed',
     'https://github.com/microsoft/onnxruntime/issues/26322'),
    ('',
     '2019-08-12 18:22:52.1338363 [E:onnxruntime:test, cuda_call.cc:93 onnxruntime::CudaCall] CUDNN failure 3: CUDNN_STATUS_BAD_PARAM ; GPU=0 ; hostname=WIN10-DEV ; expr=cudnnSetTensorNdDescriptor(tensor_, dataType, static_cast<int>(rank), dims.data(), strides.data());',
     '',
     'cudnn-bad-param',
     'https://github.com/microsoft/onnxruntime/issues/1606'),
    ('',
     '2023-04-27 09:30:07.687265610 [E:onnxruntime:log, cuda_call.cc:119 CudaCall] CUDNN failure 9: CUDNN_STATUS_NOT_SUPPORTED ; GPU=0 ; hostname=images-generation-triton-backend-test-c5f9949d-cgxz2 ; expr=cudnnSetTensorNdDescriptor(tensor_, dataType, static_cast<int>(rank), dims.data(), strides.data()); ',
     '',
     'cudnn-unsupported-config',
     'https://github.com/microsoft/onnxruntime/issues/15715'),
    ('',
     '[E:onnxruntime:InferenceEngineORT, cuda_call.cc:118 onnxruntime::CudaCall] CUDNN failure 3: CUDNN_STATUS_BAD_PARAM ; GPU=0 ; hostname=008C00014 ; file=C:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\nn\\conv_transpose.cc ; line=318 ; expr=cudnnAddTensor(GetCudnnHandle(context), &alpha, s_.b_tensor, b_data, &alpha, s_.y_tensor, y_data);',
     '',
     'cudnn-bad-param',
     'https://github.com/microsoft/onnxruntime/issues/21034'),
    ('',
     "2022-03-29 23:40:53.0760467 [E:onnxruntime:Default, cuda_call.cc:118 onnxruntime::CudaCall] CUDNN failure 8: CUDNN_STATUS_EXECUTION_FAILED ; GPU=0 ; hostname=DESKTOP-OLGA7QK ; expr=cudnnConvolutionForward(s_.handle, &alpha, s_.x_tensor, s_.x_data, s_.w_desc, s_.w_data, s_.conv_desc, s_.algo, workspace.get(), s_.workspace_bytes, &beta, s_.y_tensor, s_.y_data);\nFaceDetector error: [ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Conv node. Name:'Conv_0' Status Message: CUDNN error executing cudnnConvolutionForward(s_.handle, &alpha, s_.x_tensor, s_.x_data, s_.w_desc, s_.w_data, s_.conv_desc, s_.algo, workspace.get(), s_.workspace_bytes, &beta, s_.y_tensor, s_.y_data)",
     '',
     'cudnn-execution-failed',
     'https://github.com/iperov/DeepFaceLive/issues/55'),
    ('',
     '[E:onnxruntime:benchmark, cuda_call.cc:116 CudaCall] CUDNN failure 3: CUDNN_STATUS_BAD_PARAM ; GPU=0 ; file=/onnxruntime_src/onnxruntime/contrib_ops/cuda/fused_conv.cc ; line=85 ; expr=cudnnAddTensor(cudnnHandle, &alpha, Base::s_.z_tensor, Base::s_.z_data, &alpha, Base::s_.y_tensor, Base::s_.y_data)',
     '',
     'cudnn-bad-param',
     'https://github.com/NVIDIA-NeMo/Speech/issues/8160'),
    ('RuntimeError: cuDNN failure 3: CUDNN_STATUS_BAD_PARAM ; GPU=1 ; hostname=hoaphumanoid4gpulinux2 ;',
     'cuDNN failure 3: CUDNN_STATUS_BAD_PARAM ; GPU=3 ; hostname=hoaphumanoid4gpulinux2 ; expr=cudnnSetTensorNdDescriptor(m_tensor, dataType, nbDims, dims, strides)',
     '',
     'cudnn-bad-param',
     'https://github.com/microsoft/CNTK/issues/1218'),
    ('CuDNNError: 1: CUDNN_STATUS_NOT_INITIALIZED',
     '',
     '  File "/usr/local/lib/python2.7/dist-packages/torch/nn/modules/rnn.py", line 85, in flatten_parameters\n    handle = cudnn.get_handle()\n  File "/usr/local/lib/python2.7/dist-packages/torch/backends/cudnn/__init__.py", line 296, in get_handle\n    handle = CuDNNHandle()\n  File "/usr/local/lib/python2.7/dist-packages/torch/backends/cudnn/__init__.py", line 110, in __init__\n    check_error(lib.cudnnCreate(ctypes.byref(ptr)))\n',
     'cudnn-init-failed',
     'https://github.com/chenyuntc/pytorch-book/issues/3'),
    ('',
     'F1217 08:19:28.327307  6021 cudnn_conv_layer.cpp:53] Check failed: status == CUDNN_STATUS_SUCCESS (4 vs. 0)  CUDNN_STATUS_INTERNAL_ERROR\n*** Check failure stack trace: ***\n    @     0x7fd5b899d5cd  google::LogMessage::Fail()\n    @     0x7fd5b907dc76  caffe::CuDNNReLULayer<>::LayerSetUp()\n    @     0x7fd5b90fe203  caffe::Net<>::Init()',
     '',
     'cudnn-init-failed|cudnn-internal-error',
     'https://github.com/CMU-Perceptual-Computing-Lab/openpose/issues/357'),
    ('',
     "Non-zero status code returned while running Conv node. Name:'/feature_aggregator/backbone/conv1/Conv'Status Message: \nCUDNN failure 5000: CUDNN_STATUS_EXECUTION_FAILED ; \nGPU=0 ; \nhostname=DESK\n\n\n-SFWff ; file=D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\nn\\conv.cc ; \nline=493 ; \nexpr=cudnnAddTensor(cudnn_handle, &alpha, s_.b_tensor, s_.b_data, &alpha, s_.y_tensor, s_.y_data);",
     '',
     'cudnn-execution-failed',
     'https://github.com/microsoft/onnxruntime/issues/23497'),
    ('',
     '2022-08-13 11:42:42.261057647 [E:onnxruntime:log, cuda_call.cc:118 CudaCall] CUDNN failure 8: CUDNN_STATUS_EXECUTION_FAILED ; GPU=0 ; hostname=asr5.jd.163.org ; expr=cudnnConvolutionForward(s_.handle, &alpha, s_.x_tensor, s_.x_data, s_.w_desc, s_.w_data, s_.conv_desc, s_.algo, workspace.get(), s_.workspace_bytes, &beta, s_.y_tensor, s_.y_data);',
     '',
     'cudnn-execution-failed',
     'https://github.com/triton-inference-server/server/issues/4766'),
]

#: A missing cuDNN library, named by a loader or a provider.
MISSING_CUDNN = [
    ('',
     'FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object file: No such file or directory',
     '',
     'cudnn-library-not-found',
     'https://github.com/Gourieff/sd-webui-reactor/issues/503'),
    ('',
     "2024-12-09 13:04:11.264813429 [E:onnxruntime:Default, provider_bridge_ort.cc:1862 TryGetProviderInfo_CUDA] /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1539 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn_adv.so.9: cannot open shared object file: No such file or directory\n\nApplied providers: ['CPUExecutionProvider'], with options: {'CPUExecutionProvider': {}}",
     '',
     'cudnn-library-not-found|cudnn-sublibrary-load-failed',
     'https://github.com/memoavatar/memo/issues/13'),
    ('',
     '2024-02-23 12:12:19.240097373 [E:onnxruntime:Default, provider_bridge_ort.cc:1546 TryGetProviderInfo_CUDA] /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1209 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.8: cannot open shared object file: No such file or directory',
     '',
     'cudnn-library-not-found',
     'https://github.com/microsoft/onnxruntime/issues/19616'),
    ('RuntimeError: (PreconditionNotMet) The third-party dynamic library (cudnn64_7.dll) that Paddle depends on is not configured correctly. (error code is 126)\n  Suggestions:\n  1. Check if the third-party dynamic library (e.g. CUDA, CUDNN) is installed correctly and its version is matched with paddlepaddle you installed.\n  2. Configure third-party dynamic library environment variables as follows:\n  - Linux: set LD_LIBRARY_PATH by `export LD_LIBRARY_PATH=...`\n  - Windows: set PATH by `set PATH=XXX; (at C:\\home\\workspace\\Paddle_release\\paddle\\fluid\\platform\\dynload\\dynamic_loader.cc:265)',
     '',
     '',
     'cudnn-library-not-found',
     'https://github.com/PaddlePaddle/PaddleDetection/issues/3766'),
    ('',
     'I0822 16:07:13.031286 27082 Util.cpp:166] commandline:  --use_gpu=True --trainer_count=1 \nF0822 16:07:13.250742 27082 DynamicLoader.cpp:104] Check failed: nullptr != *dso_handle Failed to find dynamic library: libcudnn.so (libcudnn.so: cannot open shared object file: No such file or directory) \nPlease specify its path correctly using following ways: \nMethod. set environment variable LD_LIBRARY_PATH on Linux or DYLD_LIBRARY_PATH on Mac OS. ',
     '',
     'cudnn-library-not-found',
     'https://github.com/PaddlePaddle/Paddle/issues/3618'),
    ('',
     'W external/xla/xla/service/platform_util.cc:198] unable to create StreamExecutor for CUDA:0: failed initializing StreamExecutor for CUDA device ordinal 0: INTERNAL: failed call to cuDevicePrimaryCtxRetain\nCUDA backend failed to initialize: Unable to load cuDNN. Is it installed? (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)',
     '',
     'cudnn-library-not-found',
     'wording: JAX jax/_src/xla_bridge.py + jax_plugins cuda (Unable to load cuDNN)'),
]

#: Framework builds or installs without cuDNN support (own wording, fix: a build with cuDNN).
BUILT_WITHOUT = [
    ('',
     "/home/prime/.local/lib/python2.7/site-packages/chainer/cuda.py:87: UserWarning: cuDNN is not enabled.\nPlease reinstall chainer after you install cudnn\n(see https://github.com/pfnet/chainer#installation).\n  'cuDNN is not enabled.\\n'",
     '',
     'cudnn-library-not-found',
     'https://github.com/chainer/chainer/issues/1493'),
    ('',
     'ambiente/lib/python3.8/site-packages/chainer/backends/cuda.py:146: UserWarning: cuDNN is not enabled.\nPlease reinstall CuPy after you install cudnn\n(see https://docs-cupy.chainer.org/en/stable/install.html#install-cudnn).\n  warnings.warn(',
     '',
     'cudnn-library-not-found',
     'https://github.com/chainer/chainer/issues/8596'),
    ('mxnet.base.MXNetError: [15:45:06] D:/Program Files (x86)/Jenkins/workspace/mxnet/mxnet/src/operator/rnn.cu:24: RNN is only available for cuDNN at the moment.',
     '',
     '',
     'cudnn-library-not-found',
     'https://github.com/apache/mxnet/issues/4449'),
    ('mxnet.base.MXNetError: [16:48:44] ../src/operator/./rnn-inl.h:507: RNN on GPU is only available for cuDNN at the moment.',
     '',
     '',
     'cudnn-library-not-found',
     'https://github.com/HawkAaron/RNN-Transducer/issues/21'),
    ('RuntimeError: simple_bind error. Arguments:\ndata: (64, 150)\nsoftmax_label: (64,)\n[20:42:18] D:/Program Files (x86)/Jenkins/workspace/mxnet/mxnet/src/operator/rnn.cu:43: RNN is only available for cuDNN at the moment.',
     '',
     '',
     'cudnn-library-not-found',
     'https://github.com/apache/mxnet/issues/8924'),
    ('mxnet.base.MXNetError: Failed loading Op bn_pool1 of type CuDNNBatchNorm: [12:38:08] src/operator/operator.cc:19: Cannot find Operator CuDNNBatchNorm in registry',
     '',
     '',
     'cudnn-library-not-found',
     'https://github.com/piiswrong/deep3d/issues/3'),
    ('tensorflow.python.framework.errors_impl.InvalidArgumentError: No OpKernel was registered to support Op \'CudnnRNN\' with these attrs.  Registered devices: [CPU], Registered kernels:\n  <no registered kernels>\n\n\t [[Node: cu_dnngru_6/CudnnRNN = CudnnRNN[T=DT_FLOAT, direction="unidirectional", dropout=0, input_mode="linear_input", is_training=true, rnn_mode="gru", seed=87654321, seed2=0](cu_dnngru_6/transpose, cu_dnngru_6/ExpandDims_1, cu_dnngru_6/Const_1, cu_dnngru_6/concat)]]',
     '',
     '',
     'cudnn-library-not-found|cudnn-init-failed',
     'https://github.com/xl-sr/CAL/issues/4'),
    ('InvalidArgumentError (see above for traceback): No OpKernel was registered to support Op \'CudnnRNN\' with these attrs.  Registered devices: [CPU], Registered kernels:\n  <no registered kernels>\n\n\t [[Node: bilstm/CudnnRNN = CudnnRNN[T=DT_FLOAT, direction="unidirectional", dropout=0, input_mode="linear_input", is_training=true, rnn_mode="lstm", seed=87654321, seed2=0](bilstm/transpose, bilstm/ExpandDims_1, bilstm/ExpandDims_2, bilstm/concat)]]',
     '',
     '',
     'cudnn-library-not-found|cudnn-init-failed',
     'https://github.com/ningshixian/Keras-Tutorial/issues/1'),
    ('tensorflow.python.framework.errors_impl.InvalidArgumentError: No OpKernel was registered to support Op \'CudnnRNNCanonicalToParams\' used by node tower_0/cudnn_lstm/cudnn_lstm/CudnnRNNCanonicalToParams (defined at /home/varuzhan/anaconda3/envs/RUSSIAN/lib/python3.6/site-packages/tensorflow_core/python/framework/ops.py:1748) with these attrs: [seed2=257, seed=4568, dropout=0, num_params=8, T=DT_FLOAT, input_mode="linear_input", direction="unidirectional", rnn_mode="lstm"]\nRegistered devices: [CPU, XLA_CPU, XLA_GPU]\nRegistered kernels:\n  device=\'GPU\'; T in [DT_DOUBLE]\n  device=\'GPU\'; T in [DT_FLOAT]\n  device=\'GPU\'; T in [DT_HALF]\n\n\t [[tower_0/cudnn_lstm/cudnn_lstm/CudnnRNNCanonicalToParams]]',
     '',
     '',
     'cudnn-library-not-found|cudnn-init-failed',
     'https://github.com/mozilla/DeepSpeech/issues/3494'),
    ('',
     '/usr/local/lib/python3.8/site-packages/torch/backends/cudnn/__init__.py:100: UserWarning: PyTorch was compiled without cuDNN/MIOpen support. To use cuDNN/MIOpen, rebuild PyTorch making sure the library is visible to the build system.\n  warnings.warn(',
     '',
     'cudnn-library-not-found',
     'https://github.com/pytorch/pytorch/blob/main/torch/backends/cudnn/__init__.py'),
    ('RuntimeError: cuDNN is not available. Please install cuDNN to use FP8 GEMM functions.',
     '',
     '  File "flashinfer/gemm/gemm_base.py", line 1666, in _check_cudnn_availability\n',
     'cudnn-library-not-found',
     'https://github.com/flashinfer-ai/flashinfer (gemm_base.py _check_cudnn_availability)'),
]

#: Architecture errors on cuDNN code paths.
ARCH = [
    ('RuntimeError: CUDA error: no kernel image is available for execution on the device',
     '',
     '  File "/usr/local/lib/python3.8/site-packages/torch/nn/modules/rnn.py", line 175, in flatten_parameters\n    torch._cudnn_rnn_flatten_weight(\n',
     'gpu-arch-unsupported',
     'https://github.com/clarinsi/classla/issues/12'),
    ('RuntimeError: CUDA error: no kernel image is available for execution on the device',
     '',
     '~/anaconda3/envs/myenv/lib/python3.7/site-packages/torch/nn/modules/rnn.py in _apply(self, fn)\n--> 189         self.flatten_parameters()\n~/anaconda3/envs/myenv/lib/python3.7/site-packages/torch/nn/modules/rnn.py in flatten_parameters(self)\n--> 175                     self.batch_first, bool(self.bidirectional))\n',
     'gpu-arch-unsupported',
     'https://github.com/insilicomedicine/GENTRL/issues/32'),
    ('cupy.cuda.cudnn.CuDNNError: CUDNN_STATUS_ARCH_MISMATCH: CUDNN_STATUS_ARCH_MISMATCH',
     '',
     ' File "cupy/cuda/cudnn.pyx", line 171, in cupy.cuda.cudnn.create (cupy/cuda/cudnn.cpp:1487)\n File "cupy/cuda/cudnn.pyx", line 174, in cupy.cuda.cudnn.create (cupy/cuda/cudnn.cpp:1432)\n File "cupy/cuda/cudnn.pyx", line 164, in cupy.cuda.cudnn.check_status (cupy/cuda/cudnn.cpp:1308)\n',
     'gpu-arch-unsupported',
     'https://github.com/chainer/chainer/issues/740'),
    ('libcudnn.cudnnStatusArchMismatch',
     '',
     '  File "C:\\Anaconda\\lib\\site-packages\\libcudnn.py", line 277, in cudnnCreate\n    cudnnCheckStatus(status)\n',
     'gpu-arch-unsupported',
     'https://github.com/hannes-brt/cudnn-python-wrappers/issues/11'),
    ('',
     'F0628 13:44:06.798274 24168 cudnn_conv_layer.cpp:53] Check failed: status == CUDNN_STATUS_SUCCESS (6 vs. 0)  CUDNN_STATUS_ARCH_MISMATCH\n*** Check failure stack trace: ***\n    @     0x7fd5bddeb5cd  google::LogMessage::Fail()\n    @     0x7fd5be46dbc3  caffe::CuDNNConvolutionLayer<>::LayerSetUp()',
     '',
     'gpu-arch-unsupported',
     'https://github.com/CMU-Perceptual-Computing-Lab/openpose/issues/681'),
    ('Error: CUDNN_STATUS_ARCH_MISMATCH',
     '',
     '',
     'gpu-arch-unsupported',
     'https://github.com/flairNLP/flair/issues/723'),
    ('OSError: (External) CUDNN error(1), CUDNN_STATUS_NOT_INITIALIZED.',
     'W0824 17:41:21.103258 13550 gpu_resources.cc:96] The GPU architecture in your current machine is Pascal, which is not compatible with Paddle installation with arch: 70 75 80 86 , it is recommended to install the corresponding wheel package according to the installation information on the official Paddle website.\nW0824 17:41:21.103291 13550 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: 6.1, Driver API Version: 11.7, Runtime API Version: 11.7',
     '',
     'gpu-arch-unsupported|cudnn-init-failed',
     'https://github.com/PaddlePaddle/PaddleOCR/issues/10725'),
]

#: Undefined cuDNN symbols when a framework's own extension is imported.
SYMBOLS = [
    ('ImportError: /lib/python3.6/site-packages/torch/_C.cpython-36m-x86_64-linux-gnu.so: undefined symbol: cudnnSetConvolutionGroupCount',
     '',
     '',
     'cudnn-version-mismatch',
     'https://github.com/pytorch/pytorch/issues/3251'),
    ('',
     'python: symbol lookup error: /home/sn/anaconda3/envs/pytorch0.3/lib/python3.6/site-packages/torch/_C.cpython-36m-x86_64-linux-gnu.so: undefined symbol: cudnnSetConvolutionGroupCount',
     '',
     'cudnn-version-mismatch',
     'https://github.com/layumi/Person_reID_baseline_pytorch/issues/44'),
    ('ImportError: /usr/local/lib/python2.7/dist-packages/pyyolo.so: undefined symbol: cudnnSetConvolutionGroupCount',
     '',
     '',
     'cudnn-version-mismatch',
     'https://github.com/digitalbrain79/pyyolo/issues/41'),
    ('ImportError: dlopen(/Volumes/home500/anaconda/envs/pytorch/lib/python3.5/site-packages/torch/_C.cpython-35m-darwin.so, 10): Symbol not found: _cudnnBatchNormalizationBackward\n  Referenced from: /Volumes/home500/anaconda/envs/pytorch/lib/python3.5/site-packages/torch/_C.cpython-35m-darwin.so\n  Expected in: flat namespace\n in /Volumes/home500/anaconda/envs/pytorch/lib/python3.5/site-packages/torch/_C.cpython-35m-darwin.so',
     '',
     '',
     'cudnn-version-mismatch',
     'https://github.com/pytorch/pytorch/issues/1772'),
    ('ImportError: /usr/lib64/libtorch_cuda.so: undefined symbol: cudnnSetDropoutDescriptor',
     '',
     '',
     'cudnn-version-mismatch',
     'https://github.com/pytorch/pytorch/issues/139967'),
    ('ImportError: /home/parietal/hjanati/miniconda3/lib/python3.7/site-packages/jaxlib/xla_extension.so: symbol cudnnBatchNormalizationForwardTrainingEx version libcudnn.so.7 not defined in file libcudnn.so.7 with link time reference',
     '',
     '',
     'cudnn-version-mismatch',
     'https://github.com/jax-ml/jax/issues/1863'),
    ('AttributeError: /usr/local/cuda-6.5/lib64/libcudnn.so: undefined symbol: cudnnCreateTensor4dDescriptor',
     '',
     '',
     'cudnn-version-mismatch',
     'https://github.com/hannes-brt/cudnn-python-wrappers/issues/6'),
    ('',
     "I tensorflow/stream_executor/dso_loader.cc:101] successfully opened CUDA library libcublas.so.7.0 locally\nI tensorflow/stream_executor/dso_loader.cc:93] Couldn't open CUDA library libcudnn.so.6.5. LD_LIBRARY_PATH: /usr/local/cuda-7.0/lib64\nI tensorflow/stream_executor/cuda/cuda_dnn.cc:1382] Unable to load cuDNN DSO\nI tensorflow/stream_executor/dso_loader.cc:101] successfully opened CUDA library libcufft.so.7.0 locally\nF tensorflow/stream_executor/cuda/cuda_dnn.cc:1384] could not find cudnnCreate in cudnn DSO; dlerror: /usr/local/lib/python2.7/dist-packages/tensorflow/python/_pywrap_tensorflow.so: undefined symbol: cudnnCreate",
     '',
     'cudnn-library-not-found',
     'https://github.com/tensorflow/tensorflow/issues/24'),
    ('',
     'F tensorflow/stream_executor/cuda/cuda_dnn.cc:221] Check failed: s.ok() could not find cudnnCreate in cudnn DSO; dlerror: /root/miniconda3/envs/carnd-term1/lib/python3.5/site-packages/tensorflow/python/_pywrap_tensorflow.so: undefined symbol: cudnnCreate\nAborted (core dumped)',
     '',
     'cudnn-library-not-found|cudnn-version-mismatch',
     'https://github.com/udacity/CarND-Term1-Starter-Kit/issues/76'),
    ('ImportError: /usr/lib64/python3.11/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: cudnnGetLibConfig, version libcudnn_graph.so.9',
     '',
     '',
     'cudnn-version-mismatch',
     'https://github.com/pytorch/pytorch/issues/139967 (variant)'),
]

#: cuDNN's graph API / frontend (PyTorch v8 API and SDPA, ORT CUDNN_FE, TransformerEngine, llm.c, ComfyUI).
FRONTEND = [
    ('',
     "2025-10-10 02:11:48.266220354 [E:onnxruntime:YOLOv4, sequential_executor.cc:572 ExecuteKernel] Non-zero status code returned while running Conv node. Name:'StatefulPartitionedCall/model/conv2d_1/Conv2D' Status Message: Failed to initialize CUDNN Frontend/onnxruntime_src/onnxruntime/core/providers/cuda/cudnn_fe_call.cc:99 std::conditional_t<THRW, void, onnxruntime::common::Status> onnxruntime::CudaCall(ERRTYPE, const char*, const char*, SUCCTYPE, const char*, const char*, int) [with ERRTYPE = cudnn_frontend::error_object; bool THRW = true; SUCCTYPE = cudnn_frontend::error_code_t; std::conditional_t<THRW, void, common::Status> = void] CUDNN_FE failure 8: HEURISTIC_QUERY_FAILED ; GPU=0 ; hostname=177c8d853272 ; file=/onnxruntime_src/onnxruntime/core/providers/cuda/nn/conv.cc ; line=238 ; expr=s_.cudnn_fe_graph->create_execution_plans({heur_mode}); ",
     '',
     'cudnn-unsupported-config',
     'https://github.com/microsoft/onnxruntime/issues/26274'),
    ('',
     '2025-12-05 01:41:01.838744757 [E:onnxruntime:Default, cudnn_fe_call.cc:33 CudaErrString<cudnn_frontend::error_object>] execute(handle, plan->get_raw_desc(), variant_pack_descriptor.get_ptr()) failed with message: , and code: CUDNN_STATUS_EXECUTION_FAILED_CUDART\n2025-12-05 01:41:01.838766991 [E:onnxruntime:Default, cudnn_fe_call.cc:93 CudaCall] CUDNN_FE failure 11: CUDNN_BACKEND_API_FAILED ; GPU=0 ; hostname=acer ; file=/onnxruntime_src/onnxruntime/core/providers/cuda/nn/conv.cc ; line=483 ; expr=s_.cudnn_fe_graph->execute(cudnn_handle, s_.variant_pack, ws.get()); ',
     '',
     'cudnn-execution-failed',
     'https://github.com/microsoft/onnxruntime/issues/23301'),
    ('RuntimeError: cuDNN Frontend error: CUDNN_BACKEND_OPERATION: cudnnFinalize Failed cudnn_status: CUDNN_STATUS_BAD_PARAM',
     '',
     '',
     'cudnn-unsupported-config|cudnn-bad-param',
     'https://github.com/pytorch/pytorch/issues/128348'),
    ('RuntimeError: CUDNN_BACKEND_TENSOR_DESCRIPTOR cudnnFinalize failedptrDesc->finalize() cudnn_status: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED',
     '',
     '',
     'cudnn-sublibrary-load-failed',
     'https://github.com/modelscope/ms-swift/issues/6931'),
    ('[ERROR] Exception CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed cudnn_status: 3',
     '',
     '',
     'cudnn-unsupported-config|cudnn-bad-param',
     'https://github.com/NVIDIA/apex/issues/1140'),
    ('KSamplerAdvanced - cuDNN Frontend error: [cudnn_frontend] Error: No valid execution plans built.',
     '',
     '',
     'cudnn-unsupported-config',
     'https://github.com/YanWenKun/ComfyUI-Docker/issues/140'),
    ('cudnn._compiled_module.cudnnGraphNotSupportedError: [cudnn_frontend] Error: No execution plans built successfully.',
     '',
     '',
     'cudnn-unsupported-config',
     'https://github.com/NVIDIA/cudnn-frontend/issues/75'),
    ('RuntimeError: /fsx/sbuasai/test_te/deps/TransformerEngine/transformer_engine/common/fused_attn/fused_attn_f16_arbitrary_seqlen.cu:227 in function operator(): cuDNN Error: [cudnn_frontend] Error: No execution plans built successfully.. For more information, enable cuDNN error logging by setting CUDNN_LOGERR_DBG=1 and CUDNN_LOGDEST_DBG=stderr in the environment.',
     '',
     '',
     'cudnn-unsupported-config',
     'https://github.com/NVIDIA/TransformerEngine/issues/651'),
    ('',
     "train_gpt2cu: train_gpt2.cu:582: auto lookup_cache_or_build_graph_fwd(Args ...) [with Args = {int, int, int, int, bool}]: Assertion `graph->check_support(cudnn_handle).is_good()' failed.\n[ip-172-31-71-31:07018] *** Process received signal ***",
     '',
     'cudnn-unsupported-config',
     'https://github.com/karpathy/llm.c/issues/366'),
    ('',
     '[CUDNN ERROR] at file /home/kevinsouth/koifish/src/Device/CUDA/QKV.cu:284:\n[cudnn_frontend] Error: No valid execution plans built.',
     '',
     'cudnn-unsupported-config',
     'https://github.com/gruai/koifish/issues/3'),
    ('RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.',
     '',
     '[INFO] attn_output = torch.nn.functional.scaled_dot_product_attention(\n',
     'cudnn-unsupported-config',
     'https://github.com/cocktailpeanut/fluxgym/issues/118'),
    ('',
     '2025-01-06 09:16:35.512132003 [E:onnxruntime:Default, cudnn_fe_call.cc:33 CudaErrString<cudnn_frontend::error_object>] No valid engine configs for ConvFwd_\n{"engineId":55,"smVersion":860,"knobChoices":{}}\nWarning: CUDNN_STATUS_NOT_SUPPORTED; Reason: core_engine.getStatus()',
     '',
     'cudnn-unsupported-config',
     'https://github.com/microsoft/onnxruntime/pull/23244'),
    ('RuntimeError: cuDNN Frontend error: No valid engine configs for Matmul_MUL_Reduction_SUB_EXP_Reduction_LOG_ADD_DIV_Matmul_\n{"engineId":1,"smVersion":890,"knobChoices":{"CUDNN_KNOB_TYPE_KERNEL_CFG":6}}',
     '',
     '',
     'cudnn-unsupported-config',
     'https://github.com/Comfy-Org/ComfyUI/issues/9947'),
    ('cuDNN Frontend error: No valid engine configs for Matmul_MUL_Reduction_SUB_EXP_Reduction_LOG_ADD_DIV_Matmul_\n{"engineId":1,"smVersion":1200,"knobChoices":{"CUDNN_KNOB_TYPE_KERNEL_CFG":3}}\nWarning: CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING; Reason: major version mismatch between cudart and nvrtc at: cudaVersionMajor != nvrtcVersionMajor\nWarning: CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING; Reason: compiler.load()',
     '',
     '',
     'cudnn-sublibrary-load-failed|cudnn-unsupported-config',
     'https://github.com/Comfy-Org/ComfyUI/issues/10170'),
    ('Error occurred when executing KSampler:\n\ncuDNN Frontend error: s_kv not a multiple of 64 with dropout enabled is not supported with cudnn version below 9.0.0',
     '',
     '',
     'cudnn-unsupported-config|cudnn-version-mismatch',
     'https://github.com/city96/ComfyUI_ExtraModels/issues/60'),
    ('- **Exception Message:** cuDNN Frontend error: CUDNN_BACKEND_OPERATION: cudnnFinalize Failed cudnn_status: CUDNN_STATUS_BAD_PARAM',
     '',
     '',
     'cudnn-unsupported-config|cudnn-bad-param',
     'https://github.com/XLabs-AI/x-flux-comfyui/issues/145'),
]

#: Convolution algorithm searches that found nothing that runs.
CONV_ALGORITHMS = [
    ('RuntimeError: no valid convolution algorithms available in CuDNN',
     '',
     '',
     'cudnn-unsupported-config|gpu-out-of-memory',
     'https://github.com/gistvision/e2sri/issues/13'),
    ('RuntimeError: Unable to find a valid cuDNN algorithm to run convolution (try_all at /opt/conda/conda-bld/pytorch_1591914868920/work/aten/src/ATen/native/cudnn/Conv.cpp:693)',
     '',
     '',
     'cudnn-unsupported-config|gpu-out-of-memory',
     'https://github.com/deepakn97/relationPrediction/issues/37'),
    ('',
     'Original error: INTERNAL: All algorithms tried for (f32[1,2,10]{2,1,0}, u8[0]{0}) custom-call(f32[512,2,502]{2,1,0}, f32[512,1,493]{2,1,0}), window={size=10}, dim_labels=bf0_oi0->bf0, custom_call_target="__cudnn$convBackwardFilter" failed. Falling back to default algorithm.  Per-algorithm errors:\n  Profiling failure on cuDNN engine eng20{k2=6,k3=0}: UNKNOWN: <unknown cudnn status: 5003>\nin external/xla/xla/stream_executor/cuda/cuda_dnn.cc(5888): \'status\'\n  Profiling failure on cuDNN engine eng0{}: UNKNOWN: <unknown cudnn status: 5003>\nin external/xla/xla/stream_executor/cuda/cuda_dnn.cc(5888): \'status\'',
     '',
     'cudnn-unsupported-config|gpu-out-of-memory|cudnn-execution-failed',
     'https://github.com/patrick-kidger/equinox/issues/1166'),
    ('** (RuntimeError) Failed to determine best cudnn convolution algorithm for:\n%cudnn-conv = (f32[1,112,112,64]{2,1,3,0}, u8[0]{0}) custom-call(f32[1,224,224,3]{2,1,3,0} %copy, f32[7,7,3,64]{1,0,2,3} %copy.1), window={size=7x7 stride=2x2 pad=3_3x3_3}, dim_labels=b01f_01io->b01f, custom_call_target="__cudnn$convForward"\n\nOriginal error: INTERNAL: All algorithms tried for %cudnn-conv = (f32[1,112,112,64]{2,1,3,0}, u8[0]{0}) custom-call(f32[1,224,224,3]{2,1,3,0} %copy, f32[7,7,3,64]{1,0,2,3} %copy.1), window={size=7x7 stride=2x2 pad=3_3x3_3}, dim_labels=b01f_01io->b01f, custom_call_target="__cudnn$convForward" failed. Falling back to default algorithm.  Per-algorithm errors:\n  Profiling failure on cuDNN engine eng34{k2=1,k4=3,k5=1,k6=0,k7=0,k19=0}: UNKNOWN: CUDNN_STATUS_EXECUTION_FAILED',
     '',
     '',
     'cudnn-unsupported-config|gpu-out-of-memory|cudnn-execution-failed',
     'https://github.com/elixir-nx/nx/issues/1000'),
    ("  (0) NOT_FOUND: No algorithm worked!  Error messages:\n  Profiling failure on CUDNN engine 1: UNKNOWN: CUDNN_STATUS_EXECUTION_FAILED\nin tensorflow/stream_executor/cuda/cuda_dnn.cc(4023): 'cudnnConvolutionForward( cudnn.handle(), alpha, input_nd_.handle(), input_data.opaque(), filter_.handle(), filter_data.opaque(), conv_.handle(), ToConvForwardAlgo(algo), scratch_memory.opaque(), scratch_memory.size(), beta, output_nd_.handle(), output_data.opaque())'\n  Profiling failure on CUDNN engine 0: UNKNOWN: CUDNN_STATUS_ALLOC_FAILED\nin tensorflow/stream_executor/cuda/cuda_dnn.cc(4023): 'cudnnConvolutionForward( cudnn.handle(), alpha, input_nd_.handle(), input_data.opaque(), filter_.handle(), filter_data.opaque(), conv_.handle(), ToConvForwardAlgo(algo), scratch_memory.opaque(), scratch_memory.size(), beta, output_nd_.handle(), output_data.opaque())'",
     '',
     '',
     'gpu-out-of-memory|cudnn-unsupported-config',
     'https://github.com/rwth-i6/returnn/issues/1457'),
    ('NotFoundError:  No algorithm worked!\n\t [[node functional_1/conv2d/Conv2D (defined at <ipython-input-7-10b06c61fca5>:1) ]] [Op:__inference_train_function_2021]',
     '',
     '',
     'cudnn-unsupported-config|gpu-out-of-memory',
     'https://github.com/tensorflow/tensorflow/issues/43174'),
    ('',
     '2020-08-28 12:42:25.012311: W tensorflow/core/framework/op_kernel.cc:1767] OP_REQUIRES failed at conv_ops.cc:1115 : Not found: No algorithm worked!',
     '',
     'cudnn-unsupported-config|gpu-out-of-memory',
     'https://github.com/tensorflow/tensorflow/issues/42728'),
]

#: cuDNN handle creation that failed before or in cudnnCreate.
INIT = [
    ('',
     'E1123 19:13:25.034265  814362 cuda_dnn.cc:502] There was an error before creating cudnn handle (500): cudaErrorSymbolNotFound : named symbol not found',
     '',
     'cudnn-init-failed',
     'https://github.com/jax-ml/jax/issues/25075'),
    ('',
     '2023-07-03 13:06:41.867294: E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:407] There was an error before creating cudnn handle (302): cudaGetErrorName symbol not found. : cudaGetErrorString symbol not found.',
     '',
     'cudnn-init-failed',
     'https://github.com/cloudhan/jax-windows-builder/issues/28'),
    ("/home/ubuntu/torch/install/bin/luajit: /home/ubuntu/torch/install/share/lua/5.1/cudnn/init.lua:45: Error in CuDNN: CUDNN_STATUS_NOT_INITIALIZED\nstack traceback:\n        [C]: in function 'error'\n        /home/ubuntu/torch/install/share/lua/5.1/cudnn/init.lua:45: in function 'getHandle'",
     '',
     '',
     'cudnn-init-failed',
     'https://github.com/karpathy/neuraltalk2/issues/57'),
]

#: cudnnSetStream failures in every wording.
STREAM = [
    ('',
     '2019-09-06 17:04:48.845766: F tensorflow/stream_executor/cuda/cuda_dnn.cc:2294] failed to set stream for cudnn handle: CUDNN_STATUS_MAPPING_ERROR\nAborted (core dumped)',
     '',
     'cudnn-stream-set-failed|tensors-on-different-devices',
     'https://github.com/spcl/ucudnn/issues/3'),
    ('RuntimeError: cudnnSetStream returned CUDNN_STATUS_MAPPING_ERROR: mismatch between user stream and the cuDNN handle context',
     '',
     '',
     'cudnn-stream-set-failed|tensors-on-different-devices',
     'https://github.com/pytorch/pytorch/pull/2988'),
    ('',
     '2019-07-18 07:44:12.064168: F tensorflow/stream_executor/cuda/cuda_dnn.cc:189] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream',
     '',
     'cudnn-stream-set-failed',
     'https://github.com/xingyul/cpnet/issues/2'),
]

#: cuDNN kernels that failed to launch or run.
EXECUTION = [
    ('tensorflow.python.framework.errors_impl.InternalError: 2 root error(s) found.\n  (0) Internal: cudnn PoolForward launch failed\n\t [[{{node rnet/pool1}}]]\n  (1) Internal: cudnn PoolForward launch failed',
     '',
     '',
     'cudnn-execution-failed|gpu-out-of-memory',
     'https://github.com/ipazc/mtcnn/issues/98'),
    ('InternalError: cudnn PoolBackward launch failed',
     '',
     '',
     'cudnn-execution-failed|gpu-out-of-memory',
     'https://github.com/mdeff/cnn_graph/issues/20'),
    ('cudnn PoolFoward launch failed',
     '',
     '',
     'cudnn-execution-failed|gpu-out-of-memory',
     'https://github.com/hkust-vgd/shellnet/issues/18'),
    ('',
     '2018-05-11 17:12:01.109717: E tensorflow/stream_executor/cuda/cuda_dnn.cc:378] Loaded runtime CuDNN library: 7102 (compatibility version 7100) but source was compiled with 7005 (compatibility version 7000).  If using a binary install, upgrade your CuDNN library to match.\n2018-05-11 17:12:01.110291: W ./tensorflow/stream_executor/stream.h:1988] attempting to perform DNN operation using StreamExecutor without DNN support\nInternalError (see above for traceback): cudnn PoolBackward launch failed',
     '',
     'cudnn-version-mismatch',
     'https://github.com/Yishun99/KB-QA/issues/5'),
    ('',
     'F0525 12:35:32.850440 182776 cudnn_conv_layer.cu:28] Check failed: status == CUDNN_STATUS_SUCCESS (8 vs. 0)  CUDNN_STATUS_EXECUTION_FAILED\n*** Check failure stack trace: ***',
     '',
     'cudnn-execution-failed|gpu-out-of-memory',
     'https://github.com/msracver/Deep-Image-Analogy/issues/3'),
]

#: Descriptors and arguments cuDNN rejected.
BAD_PARAM = [
    ('',
     'F tensorflow/stream_executor/cuda/cuda_dnn.cc:430] could not convert BatchDescriptor {count: 1 feature_map_count: 1024 spatial: 0 0  value_min: 0.000000 value_max: 0.000000 layout: BatchDepthYX} to cudnn tensor descriptor: CUDNN_STATUS_BAD_PARAM\nAborted (core dumped)',
     '',
     'cudnn-bad-param',
     'https://github.com/GeorgeSeif/Semantic-Segmentation-Suite/issues/158'),
    ('',
     'F tensorflow/stream_executor/cuda/cuda_dnn.cc:516] Check failed: cudnnSetTensorNdDescriptor(handle_.get(), elem_type, nd, dims.data(), strides.data()) == CUDNN_STATUS_SUCCESS (3 vs. 0)batch_descriptor: {count: 1 feature_map_count: 32 spatial: 0 86  value_min: 0.000000 value_max: 0.000000 layout: BatchDepthYX}',
     '',
     'cudnn-bad-param',
     'https://github.com/MKLab-ITI/visil/issues/7'),
    ('/home/scs4850/torch/install/share/lua/5.1/cudnn/init.lua:162: Error in CuDNN: CUDNN_STATUS_BAD_PARAM (cudnnSetConvolutionNdDescriptor)',
     '',
     '',
     'cudnn-bad-param',
     'https://github.com/soumith/cudnn.torch/issues/298'),
    ('',
     'CUDNN failure: CUDNN_STATUS_BAD_PARAM\n/home/admin/cudnn-training-master/lenet.cu:658\nAborting...',
     '',
     'cudnn-bad-param',
     'https://github.com/tbennun/cudnn-training/issues/17'),
]

#: cuDNN sub-libraries and their own dependencies.
SUBLIBRARY = [
    ('',
     'Could not load library cudnn_ops_infer64_8.dll. Error code 126\nPlease make sure cudnn_ops_infer64_8.dll is in your library path!',
     '',
     'cudnn-sublibrary-load-failed|cudnn-library-not-found',
     'https://github.com/markgoodhead/dictate-wizard/issues/2'),
    ('',
     'Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!',
     '',
     'cudnn-sublibrary-load-failed|cudnn-library-not-found',
     'https://github.com/lllyasviel/stable-diffusion-webui-forge/issues/2798'),
    ('',
     'Could not load library cudnn_cnn_infer64_8.dll. Error code 127',
     '',
     'cudnn-sublibrary-load-failed',
     'https://github.com/PaddlePaddle/PaddleDetection/issues/8265'),
    ('',
     'Loading Whisper Model!\nUnable to load any of {libcudnn_ops.so.9.1.0, libcudnn_ops.so.9.1, libcudnn_ops.so.9, libcudnn_ops.so}\nInvalid handle. Cannot load symbol cudnnCreateTensorDescriptor',
     '',
     'cudnn-sublibrary-load-failed|cudnn-library-not-found',
     'https://github.com/daswer123/xtts-finetune-webui/issues/18'),
    ('',
     'selected_audio_provider: fasterwhisper\n**Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory**\nstart.sh: line 14: 10456 Aborted                 (core dumped) streamlit run gui.py',
     '',
     'cudnn-sublibrary-load-failed|cudnn-library-not-found',
     'https://github.com/ddean2009/MoneyPrinterPlus/issues/51'),
    ('',
     'Could not load symbol cudnnGetLibConfig. Error: /usr/local/cuda/lib64/libcudnn_graph.so.9: undefined symbol: cudnnGetLibConfig',
     '',
     'cudnn-sublibrary-load-failed',
     'https://github.com/opendatalab/MinerU/issues/2664'),
    ('',
     'Unable to load any of {libcudnn_graph.so.9.1.0, libcudnn_graph.so.9.1, libcudnn_graph.so.9, libcudnn_graph.so}\nInvalid handle. Cannot load symbol cudnnCreate',
     '',
     'cudnn-sublibrary-load-failed|cudnn-library-not-found',
     'https://github.com/modelscope/ms-swift/issues/3390'),
    ('',
     'Could not load library libcudnn_cnn_infer.so.8. Error: /usr/local/Cluster-Apps/cuda/8.0/lib64/libnvrtc.so: undefined symbol: nvrtcGetCUBIN',
     '',
     'cudnn-sublibrary-load-failed',
     'https://github.com/nanoporetech/dorado/issues/166'),
    ('',
     'Could not load library libcudnn_cnn_train.so.8. Error: /home/czh/anaconda3/envs/python39/bin/../lib/libcudnn_ops_train.so.8: undefined symbol: _Z22cudnnGenericOpTensorNdILi2EE13cudnnStatus_tP12cudnnContext16cudnnGenericOp_t21cudnnNanPropagation_tPK21cudnnActivationStructPKvPK17cudnnTensorStructS9_S9_SC_S9_S9_SC_Pv, version libcudnn_ops_infer.so.8',
     '',
     'cudnn-sublibrary-load-failed',
     'https://github.com/NVIDIA/nvidia-container-toolkit/issues/224'),
]

#: Theano's own cuDNN checks (further kind found in the sample).
THEANO = [
    ('',
     'Can not use cuDNN on context None: cannot compile with cuDNN. We got this error:\nIn file included from /tmp/try_flags_Y9EarB.c:4:0:\n/usr/include/cudnn.h:63:26: fatal error: driver_types.h: No such file or directory\n #include "driver_types.h"\n                          ^\ncompilation terminated.\n\nMapped name None to device cuda0: GeForce GTX 1060 6GB (0000:01:00.0)',
     '',
     'cudnn-library-not-found',
     'https://github.com/Theano/Theano/issues/5943'),
    ('',
     "Using Theano backend.\nCan not use cuDNN on context None: cannot compile with cuDNN. We got this error:\nb'C:\\\\Users\\\\dines\\\\AppData\\\\Local\\\\Temp\\\\try_flags_f7vkrtdy.c:4:19: fatal error: cudnn.h: No such file or directory\\r\\ncompilation terminated.\\r\\n'\nPreallocating 3276/4096 Mb (0.800000) on cuda0\nMapped name None to device cuda0: GeForce GTX 1050 (0000:01:00.0)",
     '',
     'cudnn-library-not-found',
     'https://github.com/Theano/Theano/issues/6328'),
    ('',
     'Can not use cuDNN on context None: Device not supported\nMapped name None to device cuda: GeForce 820M (0000:09:00.0)',
     '',
     'gpu-arch-unsupported',
     'https://github.com/Theano/libgpuarray/issues/566'),
    ('RuntimeError: Mixed dnn version. The header is version 5005 while the library is version 5110.',
     '',
     '',
     'cudnn-version-mismatch',
     'https://github.com/Theano/Theano/issues/5581'),
    ('',
     'Using gpu device 1: Tesla K20Xm (CNMeM is disabled, cuDNN Version is too old. Update to v5, was 3007.)',
     '',
     'cudnn-version-mismatch',
     'https://github.com/Theano/Theano/issues/4437'),
]

#: Memory statuses from cuDNN calls.
MEMORY = [
    ('/home/usrname/torch/install/share/lua/5.1/cudnn/init.lua:118: Error in CuDNN: CUDNN_STATUS_ALLOC_FAILED (cudnnFindConvolutionForwardAlgorithm)',
     '',
     '',
     'gpu-out-of-memory',
     'https://github.com/torch/torch7/issues/780'),
    ('mxnet.base.MXNetError: [16:26:09] src/operator/nn/./cudnn/cudnn_convolution-inl.h:713: Check failed: e == CUDNN_STATUS_SUCCESS (2 vs. 0) cuDNN: CUDNN_STATUS_ALLOC_FAILED',
     '',
     '',
     'gpu-out-of-memory',
     'https://github.com/ElegantGod/SSHA/issues/5'),
]

#: Real non-cuDNN GPU errors next to each kind above: no cudnn-* id may be claimed.
NEGATIVES = [
    ('',
     '2024-03-27 06:33:23.219728338 [E:onnxruntime:Default, provider_bridge_ort.cc:1548 TryGetProviderInfo_CUDA] /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1209 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: cannot open shared object file: No such file or directory\n\n2024-03-27 06:33:23.219759101 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:861 CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Please reference https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirementsto ensure all dependencies are met.',
     '',
     'NONE',
     'https://github.com/PaddlePaddle/PaddleNLP/issues/8195'),
    ('ai.onnxruntime.OrtException: Error code - ORT_RUNTIME_EXCEPTION - message: /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1029 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcublas.so.11: cannot open shared object file: No such file or directory',
     '',
     '',
     'NONE',
     'https://github.com/microsoft/onnxruntime/issues/12540'),
    ('called `Result::unwrap()` on an `Err` value: Error { code: GenericFailure, message: "/home/runner/work/ort-artifacts/ort-artifacts/onnxruntime/onnxruntime/core/session/provider_bridge_ort.cc:1952 Provider &onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library /home/meh/devel/ort-cuda-13-fail/target/debug/libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open shared object file: No such file or directory\\n", ptr: 0x55e586ee5080 }',
     '',
     '',
     'NONE',
     'https://github.com/pykeio/ort/issues/548'),
    ('',
     "2024-01-17 [E:onnxruntime:Default, provider_bridge_ort.cc:1480 TryGetProviderInfo_CUDA] /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1193 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcufft.so.10: cannot open shared object file: No such file or directory\n\nApplied providers: ['CPUExecutionProvider'], with options: {'CPUExecutionProvider': {}}",
     '',
     'NONE',
     'https://github.com/hacksider/Deep-Live-Cam/issues/294'),
    ('',
     '2024-07-06 10:56:25.700705931 [E:onnxruntime:Default, provider_bridge_ort.cc:1745 TryGetProviderInfo_CUDA] /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1426 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcurand.so.10: cannot open shared object file: No such file or directory',
     '',
     'NONE',
     'https://github.com/cnstark/pytorch-docker/issues/21'),
    ('',
     "EP Error /onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1193 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_tensorrt.so with error: libnvinfer.so.8: cannot open shared object file: No such file or directory\n when using ['TensorrtExecutionProvider']\nFalling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying.",
     '',
     'NONE',
     'https://github.com/microsoft/onnxruntime/issues/18597'),
    ('ImportError: libnvinfer.so.8: cannot open shared object file: No such file or directory',
     '',
     '',
     'NONE',
     'https://github.com/wang-xinyu/tensorrtx/issues/1501'),
    ('',
     '/usr/local/lib/python3.6/dist-packages/onnxruntime/capi/_pybind_state.py:13: UserWarning: Cannot load onnxruntime.capi. Error: \'libnvinfer.so.5: cannot open shared object file: No such file or directory\'\n  warnings.warn("Cannot load onnxruntime.capi. Error: \'{0}\'".format(str(e)))\nImportError: cannot import name \'RunOptions\'',
     '',
     'NONE',
     'https://github.com/Azure-Samples/onnxruntime-iot-edge/issues/17'),
    ('RuntimeError: Library libcublas.so.12 is not found or cannot be loaded',
     '',
     '  File "/home/heike/anaconda3/envs/GPT-SoVITS-beta0306/lib/python3.9/site-packages/faster_whisper/transcribe.py", line 762, in encode\n    return self.model.encode(features, to_cpu=to_cpu)\n',
     'NONE',
     'https://github.com/RVC-Boss/GPT-SoVITS/issues/727'),
    ('RuntimeError: Library cublas64_12.dll is not found or cannot be loaded',
     '',
     '',
     'NONE',
     'https://github.com/SYSTRAN/faster-whisper/issues/1276'),
    ('',
     'hehe\nCould not load library libcublasLt.so.11. Error: libcublasLt.so.11: cannot open shared object file: No such file or directory\nAborted (core dumped)',
     '',
     'NONE',
     'https://github.com/SYSTRAN/faster-whisper/issues/1017'),
    ('',
     'Could not locate cublasLt64_12.dll. Please make sure it is in your library path!',
     '',
     'NONE',
     'https://github.com/SYSTRAN/faster-whisper/issues/575'),
    ('RuntimeError: Library libcublas.so.11 is not found or cannot be loaded',
     '',
     '',
     'NONE',
     'https://github.com/m-bain/whisperX/issues/632'),
    ('ImportError: libcusolver.so.10.0: cannot open shared object file: No such file or directory',
     '',
     '',
     'NONE',
     'https://github.com/jax-ml/jax/issues/2315'),
    ('RuntimeError: CUDA error: no kernel image is available for execution on the device',
     '',
     '',
     'NONE|gpu-arch-unsupported',
     'https://github.com/bitsandbytes-foundation/bitsandbytes/issues/48'),
    ('',
     'F0828 cudaSuccess (48 vs. 0) no kernel image is available for execution on the device',
     '',
     'NONE|gpu-arch-unsupported',
     'https://github.com/NVIDIA/nvidia-docker/issues/1055'),
    ('InternalError (see above for traceback): Failed launching MaxPoolForwardNoMask\n[[Node: pool1 = MaxPool[T=DT_FLOAT, data_format="NHWC", ksize=[1, 2, 2, 1], padding="VALID", strides=[1, 2, 2, 1], _device="/job:localhost/replica:0/task:0/gpu:0"](conv1_2/conv1_2)]]',
     '',
     '',
     'NONE',
     'https://github.com/tensorflow/tensorflow/issues/9737'),
    ('RuntimeError: (PreconditionNotMet) The third-party dynamic library (cublas64_102.dll;cublas64_10.dll) that Paddle depends on is not configured correctly. (error code is 126)\n  Suggestions:\n  1. Check if the third-party dynamic library (e.g. CUDA, CUDNN) is installed correctly and its version is matched with paddlepaddle you installed.',
     '',
     '',
     'NONE',
     'https://github.com/PaddlePaddle/Paddle/issues/33523'),
    ('RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`',
     '',
     '',
     'NONE',
     'https://github.com/QwenLM/Qwen/issues/120'),
    ('',
     "2021-06-02 W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory\n2021-06-02 I tensorflow/stream_executor/cuda/cudart_stub.cc:29] Ignore above cudart dlerror if you do not have a GPU set up on your machine.",
     '',
     'NONE',
     'https://github.com/tensorflow/tensorflow/issues/45930'),
    ('',
     "2021 W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No such file or directory\n2021 W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libnvinfer_plugin.so.7'; dlerror: libnvinfer_plugin.so.7: cannot open shared object file: No such file or directory\n2021 W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Cannot dlopen some TensorRT libraries. If you would like to use Nvidia GPU with TensorRT, please make sure the missing libraries mentioned above are installed properly.",
     '',
     'NONE',
     'wording: TensorFlow dso_loader.cc + compiler/tf2tensorrt/utils/py_utils.cc (TF 2.4-2.10)'),
    ('',
     "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcusolver.so.11'; dlerror: libcusolver.so.11: cannot open shared object file: No such file or directory\nW tensorflow/core/common_runtime/gpu/gpu_device.cc:1850] Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the required libraries for your platform.\nSkipping registering GPU devices...",
     '',
     'NONE',
     'https://github.com/tensorflow/tensorflow/issues/45263 (with gpu_device.cc Cannot dlopen)'),
    ('ImportError: libcublas.so.9.0: cannot open shared object file: No such file or directory\n\nFailed to load the native TensorFlow runtime.',
     '',
     '',
     'NONE',
     'wording: TensorFlow 1.x pywrap_tensorflow.py import failure (libcublas.so.9.0)'),
    ('OSError: libcurand.so.10: cannot open shared object file: No such file or directory',
     '',
     '',
     'NONE',
     'wording: glibc dlopen error on import torch (libcurand.so.10)'),
    ('RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR',
     '',
     '',
     'NONE',
     'https://github.com/pytorch/pytorch/issues/89556'),
    ('RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1607370172916/work/torch/lib/c10d/ProcessGroupNCCL.cpp:784, unhandled cuda error, NCCL version 2.7.8',
     '',
     '',
     'NONE',
     'wording: PyTorch ProcessGroupNCCL.cpp'),
    ('AssertionError: Torch not compiled with CUDA enabled',
     '',
     '',
     'NONE',
     'wording: PyTorch torch/cuda/__init__.py _lazy_init'),
    ('ValueError: This CTranslate2 package was not compiled with CUDA support',
     '',
     '',
     'NONE',
     'https://github.com/m-bain/whisperX/issues/575'),
    ('RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx',
     '',
     '',
     'NONE',
     'wording: PyTorch torch/cuda/__init__.py _check_driver'),
    ('',
     '2023 [E:onnxruntime:Default, cuda_call.cc:116 CudaCall] CUDA failure 100: no CUDA-capable device is detected ; GPU=0 ; hostname=x ; file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_execution_provider.cc ; line=245 ; expr=cudaSetDevice(info_.device_id);',
     '',
     'NONE',
     'https://github.com/deepinsight/insightface/issues/2524'),
    ('',
     '[E:onnxruntime:Default, cuda_call.cc:118 CudaCall] CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; hostname=x ; expr=cublasCreate(&cublas_handle_);',
     '',
     'NONE|gpu-out-of-memory',
     'wording: ONNX Runtime cuda_call.cc CudaCall for cublasStatus_t'),
    ("OSError: (External) CUDA error(209), no kernel image is available for execution on the device. \n  [Hint: 'cudaErrorNoKernelImageForDevice'. This indicates that there is no kernel image available that is suitable for the device.]",
     '',
     '',
     'NONE|gpu-arch-unsupported',
     'wording: PaddlePaddle enforce.h CUDA error hint (cudaErrorNoKernelImageForDevice)'),
    ('RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.',
     '',
     '',
     'NONE',
     'wording: PyTorch c10/cuda/CUDAException.h'),
    ('',
     '2020 W tensorflow/core/common_runtime/bfc_allocator.cc:439] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)requested by op Conv2D',
     '',
     'NONE|gpu-out-of-memory',
     'wording: TensorFlow core/common_runtime/bfc_allocator.cc'),
    ('tensorflow.python.framework.errors_impl.InternalError: Blas GEMM launch failed : a.shape=(32, 784), b.shape=(784, 512), m=32, n=512, k=784\n\t [[{{node dense/MatMul}}]]',
     '',
     '',
     'NONE|gpu-out-of-memory',
     'https://github.com/dabasajay/Image-Caption-Generator/issues/20'),
    ('RuntimeError: CUDA error: no kernel image is available for execution on the device',
     '',
     '  File "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py", line 443, in _conv_forward\n    return F.conv2d(input, weight, bias, self.stride,\n',
     'NONE|gpu-arch-unsupported',
     'wording: PyTorch cudaErrorNoKernelImageForDevice raised in F.conv2d'),
    ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: run time error: custom call 'xla.gpu.func.launch' failed: Failed to launch CUDA kernel: fusion with block dimensions: 1024x1x1 and grid dimensions: 1x1x1 and shared memory size: 0: CUDA_ERROR_OUT_OF_MEMORY: out of memory.",
     '',
     '',
     'NONE|gpu-out-of-memory',
     'wording: XLA gpu runtime (CUDA_ERROR_OUT_OF_MEMORY in a fusion launch)'),
    ('',
     "2024 W external/local_xla/xla/service/gpu/nvptx_compiler.cc:763] The NVIDIA driver's CUDA version is 12.2 which is older than the ptxas CUDA version (12.5.82). Because the driver is older than the ptxas version, XLA is disabling parallel compilation, which may slow down compilation. You should update your NVIDIA driver or use the NVIDIA-provided CUDA forward compatibility packages.",
     '',
     'NONE',
     'wording: XLA service/gpu/nvptx_compiler.cc'),
    ('UserWarning: RNN module weights are not part of single contiguous chunk of memory. This means they need to be compacted at every call, possibly greatly increasing memory usage. To compact weights again call flatten_parameters().',
     '',
     '',
     'NONE',
     'wording: PyTorch torch/nn/modules/rnn.py'),
    ('',
     'An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.',
     '',
     'NONE|cudnn-library-not-found',
     'https://github.com/jax-ml/jax/issues/30050'),
    ('',
     'CUBLAS_STATUS_ARCH_MISMATCH error while trying to run Lc0 v0.29 CUDNN backend',
     '',
     'NONE',
     'https://github.com/LeelaChessZero/lc0/issues/1820'),
    ('InvalidArgumentError: Graph execution error:\n\n2 root error(s) found.\n  (0) INVALID_ARGUMENT:  No OpKernel was registered to support Op \'CudnnRNN\' used by {{node CudnnRNN}} with these attrs: [seed=0, dropout=0, T=DT_FLOAT, input_mode="linear_input", direction="unidirectional", rnn_mode="lstm", seed2=0, is_training=true]\nRegistered devices: [CPU, GPU]\nRegistered kernels:\n  <no registered kernels>\n\n\t [[CudnnRNN]]',
     '',
     '',
     'NONE',
     'https://github.com/microsoft/tensorflow-directml-plugin/issues/318'),
    ('!!! Exception during processing !!! miopenStatusInternalError',
     '',
     '',
     'NONE',
     'https://github.com/ROCm/TheRock/issues/1389'),
    ('',
     'jax._src.xla_bridge: CUDA backend failed to initialize: Unable to load cuSPARSE. Is it installed? (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)',
     '',
     'NONE',
     'https://github.com/jax-ml/jax/issues/28929'),
    ('',
     'An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.\nCUDA backend failed to initialize: Unable to load CUDA. Is it installed?',
     '',
     'NONE',
     'wording: JAX jax/_src/xla_bridge.py (CUDA plugin could not load CUDA)'),
    ('ImportError: (...)python3.6/site-packages/vision_sandbox-0.1-py3.6-linux-x86_64.egg/vision_sandbox/_C.cpython-36m-x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC1ENS_14SourceLocationERKSs',
     '',
     '',
     'NONE',
     'https://github.com/foolyc/torchKNN/issues/2'),
    ('ImportError: /home/rluo/anaconda2/lib/python2.7/site-packages/torch/lib/libATen.so.1: undefined symbol: THNN_CudaClassNLLCriterion_updateOutput',
     '',
     '',
     'NONE',
     'https://github.com/pytorch/pytorch/issues/3345'),
    ('ImportError: dlopen(/usr/local/lib/python3.7/site-packages/torch/_C.cpython-37m-darwin.so, 2): Symbol not found: _cublasCreate_v2',
     '',
     '',
     'NONE',
     'wording: macOS dyld Symbol not found (torch _C on macOS with CUDA)'),
    ('RuntimeError: FlashAttention only supports Ampere GPUs or newer.',
     '',
     '',
     'NONE',
     'wording: flash-attn flash_api.cpp'),
    ('RuntimeError: No available kernel. Aborting execution.',
     '',
     '',
     'NONE',
     'wording: PyTorch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp'),
    ('RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedExFix(handle, opa, opb, m, n, k, (void*)(&falpha), a, CUDA_R_16BF, lda, stridea, b, CUDA_R_16BF, ldb, strideb, (void*)(&fbeta), c, CUDA_R_16BF, ldc, stridec, num_batches, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`',
     '',
     '',
     'NONE',
     'wording: PyTorch aten/src/ATen/cuda/CUDABlas.cpp'),
    ('',
     '2020-01-01 E tensorflow/stream_executor/cuda/cuda_driver.cc:318] failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected',
     '',
     'NONE',
     'wording: TensorFlow stream_executor/cuda/cuda_driver.cc'),
    ('',
     '2020-01-01 E tensorflow/stream_executor/cuda/cuda_driver.cc:1010] failed to synchronize the stop event: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure\nE tensorflow/stream_executor/cuda/cuda_timer.cc:55] Internal: error destroying CUDA event in context 0x55d7: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure',
     '',
     'NONE',
     'wording: TensorFlow stream_executor/cuda/cuda_driver.cc / cuda_timer.cc'),
    ('',
     'WARNING (theano.tensor.blas): Using NumPy C-API based implementation for BLAS functions.\nERROR (theano.gpuarray): Could not initialize pygpu, support disabled',
     '',
     'NONE',
     'https://github.com/Theano/libgpuarray/issues/574 (log lines around it)'),
    ('',
     '2024-05-01 W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not find TensorRT',
     '',
     'NONE',
     'wording: TensorFlow compiler/tf2tensorrt/utils/py_utils.cc'),
]

KINDS = {
    "calls": CALLS, "missing-cudnn": MISSING_CUDNN, "built-without": BUILT_WITHOUT, "arch": ARCH,
    "symbols": SYMBOLS, "frontend": FRONTEND, "conv-algorithms": CONV_ALGORITHMS, "init": INIT,
    "stream": STREAM, "execution": EXECUTION, "bad-param": BAD_PARAM, "sublibrary": SUBLIBRARY,
    "theano": THEANO, "memory": MEMORY, "negatives": NEGATIVES,
}
ROWS = [(kind, i, row) for kind, rows in KINDS.items() for i, row in enumerate(rows)]


def _check(ids: list[str], accepted: str, what: str) -> None:
    acc = accepted.split("|")
    first = ids[0] if ids else "NONE"
    assert first in acc, (what, ids)
    if "NONE" in acc:
        assert not [i for i in ids if i.startswith("cudnn-")], (what, ids)


@pytest.mark.parametrize("kind,i,row", ROWS, ids=[f"{k}-{i:02d}" for k, i, _ in ROWS])
def test_real_report(kind, i, row):
    exc, log, tb, accepted, source = row
    assert source.startswith(("https://", "wording: "))
    res = diagnose(exception=exc, log=log, traceback=tb)
    _check([d.id for d in res], accepted, "fields")
    if res:  # evidence is quoted from the input, never invented
        text = "\n".join((exc, log, tb))
        assert any(e[:40] in text or e.startswith(("fact:", "note:")) for e in res[0].evidence), res[0].evidence
    pasted = "\n".join(x for x in (log, tb, exc) if x)
    _check([d.id for d in diagnose(log=pasted)], accepted, "pasted")


def test_every_kind_has_real_wordings_and_negatives():
    for kind, rows in KINDS.items():
        assert len(rows) >= 2, kind
    assert len(NEGATIVES) >= 40
    # every row is a distinct wording
    texts = [r[0] + r[1] + r[2] for rows in KINDS.values() for r in rows]
    assert len(texts) == len(set(texts))


# --------------------------------------------------------------------------- what the top diagnosis says


def _top(exc="", log="", tb=""):
    res = diagnose(exception=exc, log=log, traceback=tb)
    assert res
    return res


def test_failing_call_refines_a_bare_status_and_keeps_it_as_also_possible():
    res = _top(log=CALLS[1][0])  # ORT: CUDNN failure 1 ... expr=cudnnCreate(&cudnn_handle_)
    assert res[0].id == "cudnn-init-failed"
    internal = ("[E:onnxruntime:Default, cuda_call.cc:121 CudaCall] CUDNN failure 4: CUDNN_STATUS_INTERNAL_ERROR ; "
                "GPU=0 ; hostname=x ; file=/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_stream_handle.cc ; "
                "line=52 ; expr=cudnnCreate(&cudnn_handle_);")
    res = _top(log=internal)
    assert [d.id for d in res][:2] == ["cudnn-init-failed", "cudnn-internal-error"]
    assert "cudnnCreate" in res[0].title and "CUDNN_STATUS_INTERNAL_ERROR" in res[0].title
    assert res[0].versions["call"] == "cudnnCreate"
    # the same status from a kernel keeps its own meaning
    kernel = internal.replace("cuda_stream_handle.cc", "nn/conv.cc").replace(
        "expr=cudnnCreate(&cudnn_handle_);", "expr=cudnnConvolutionForward(s_.handle, &alpha);")
    assert _top(log=kernel)[0].id == "cudnn-internal-error"
    # a status with a meaning of its own is never overridden by the call
    alloc = internal.replace("CUDNN failure 4: CUDNN_STATUS_INTERNAL_ERROR", "CUDNN failure 2: CUDNN_STATUS_ALLOC_FAILED")
    assert _top(log=alloc)[0].id == "gpu-out-of-memory"


def test_pytorch_handle_frame_decides():
    exc = "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"
    frame = ("Exception raised from createCuDNNHandle at ..\\aten\\src\\ATen\\cudnn\\Handle.cpp:9 (most recent call first):\n"
             "00007FFE055075A200007FFE05507540 c10.dll!c10::Error::Error [<unknown file> @ <unknown line number>]")
    assert _top(exc=exc)[0].id == "cudnn-internal-error"
    assert _top(exc=exc + "\n" + frame)[0].id == "cudnn-init-failed"


def test_only_the_library_really_missing_decides():
    ort = ("[E:onnxruntime:Default, provider_bridge_ort.cc:1548 TryGetProviderInfo_CUDA] ... [ONNXRuntimeError] : 1 : "
           "FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: {lib}: cannot open shared object "
           "file: No such file or directory\n[W:onnxruntime:Default, onnxruntime_pybind_state.cc:861 "
           "CreateExecutionProviderInstance] Failed to create CUDAExecutionProvider. Please reference "
           "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements")
    for lib in ("libcublasLt.so.11", "libcufft.so.10", "libcudart.so.12", "libnvinfer.so.8", "libcuda.so.1"):
        assert not [d.id for d in diagnose(log=ort.format(lib=lib)) if d.id.startswith("cudnn-")], lib
    for lib, want in (("libcudnn.so.9", "cudnn-library-not-found"), ("libcudnn_adv.so.9", "cudnn-sublibrary-load-failed")):
        assert _top(log=ort.format(lib=lib))[0].id == want


def test_built_without_cudnn_says_so_and_offers_a_build_with_it():
    for exc, log, tb, _, _ in BUILT_WITHOUT:
        d = _top(exc, log, tb)[0]
        assert d.id == "cudnn-library-not-found"
        assert "install-cudnn-build" in [f.id for f in d.fixes] or "install-matching-cudnn" in [f.id for f in d.fixes]
    d = _top(log=BUILT_WITHOUT[0][1])[0]  # Chainer: cuDNN is not enabled
    assert d.fixes[0].id == "install-cudnn-build" and "cuDNN" in d.title
    tf = _top(exc=BUILT_WITHOUT[6][0])[0]  # TensorFlow CPU build asked for CudnnRNN
    assert tf.fixes[0].id == "install-cudnn-build" and "tensorflow[and-cuda]" in tf.fixes[0].action
    assert "CudnnRNN" in tf.title


def test_no_kernel_image_is_an_arch_error_only_on_a_cudnn_path():
    exc = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    rnn = ("  File \"/usr/lib/python3/site-packages/torch/nn/modules/rnn.py\", line 175, in flatten_parameters\n"
           "    torch._cudnn_rnn_flatten_weight(\n")
    conv = "  File \"/usr/lib/python3/site-packages/torch/nn/modules/conv.py\", line 443, in _conv_forward\n"
    assert not diagnose(exception=exc, traceback=conv)
    assert _top(exc=exc, tb=rnn)[0].id == "gpu-arch-unsupported"


def test_undefined_symbol_in_a_framework_extension_is_a_version_mismatch():
    assert _top(exc=SYMBOLS[0][0])[0].id == "cudnn-version-mismatch"
    sub = ("Could not load library libcudnn_cnn_train.so.8. Error: /usr/local/cuda/lib64/libcudnn_cnn_train.so.8: "
           "undefined symbol: _ZN5cudnn3cnn34layerNormFwd, version libcudnn_cnn_infer.so.8")
    assert _top(log=sub)[0].id == "cudnn-sublibrary-load-failed"


def test_convolution_algorithms_memory_is_the_alternative_unless_evidence_says_so():
    res = _top(exc="RuntimeError: Unable to find a valid cuDNN algorithm to run convolution")
    assert [d.id for d in res][:2] == ["cudnn-unsupported-config", "gpu-out-of-memory"]
    res = _top(exc="RuntimeError: Unable to find a valid cuDNN algorithm to run convolution",
               log="torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert res[0].id == "gpu-out-of-memory" and "cudnn-unsupported-config" in [d.id for d in res]
    xla = CONV_ALGORITHMS[3][0]  # "Failed to determine best ... Original error: INTERNAL: All algorithms tried"
    assert _top(exc=xla)[0].id == "cudnn-unsupported-config"


def test_frontend_error_codes_and_execute_failures():
    assert _top(log=FRONTEND[0][1])[0].id == "cudnn-unsupported-config"  # CUDNN_FE failure 8: HEURISTIC_QUERY_FAILED
    assert _top(log=FRONTEND[1][1])[0].id == "cudnn-execution-failed"  # execute(...) EXECUTION_FAILED_CUDART
    sdpa = "RuntimeError: Expected mha_graph->execute(handle, variant_pack, workspace_ptr.get()).is_good() to be true, but got false."
    res = _top(exc=sdpa)
    assert [d.id for d in res][:2] == ["cudnn-execution-failed", "cudnn-unsupported-config"]
    assert any(f.id == "cudnn-fallback" for f in res[0].fixes)
