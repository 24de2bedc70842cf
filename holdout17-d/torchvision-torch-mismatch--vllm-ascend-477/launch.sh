export IMAGE_PREFIX=m.daocloud.io/
export IMAGE=${IMAGE_PREFIX}quay.io/ascend/cann:8.0.0-910b-ubuntu22.04-py3.10

docker run --rm \
--name vllm-ascend \
--device /dev/davinci0 \
--device /dev/davinci1 \
--device /dev/davinci_manager \
--device /dev/devmm_svm \
--device /dev/hisi_hdc \
-v /usr/local/dcmi:/usr/local/dcmi \
-v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi \
-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/ \
-v /usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info \
-v /etc/ascend_install.info:/etc/ascend_install.info \
-v /root/.cache:/root/.cache \
-p 8000:8000 \
-it $IMAGE bash

docker exec -it vllm-ascend /bin/bash

## 2. Install vLLM latest release

apt update  -y; apt install -y gcc g++ libnuma-dev vim git
pip config set global.index-url https://mirrors.tuna.tsinghua.edu.cn/pypi/web/simple
pip install vllm

## 3. Install vLLM Ascend main
# Install vLLM Ascend
git clone  --depth 1 --branch main  https://gitee.com/mirrors/vllm-ascend
cd vllm-ascend
pip install -e . --extra-index https://download.pytorch.org/whl/cpu/

mkdir pta
cd pta
wget https://pytorch-package.obs.cn-north-4.myhuaweicloud.com/pta/Daily/v2.5.1/20250320.3/pytorch_v2.5.1_py310.tar.gz
tar -xvf pytorch_v2.5.1_py310.tar.gz
