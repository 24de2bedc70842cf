# Install vllm-project/vllm. The newest supported version is v0.18.0.
pip install vllm==0.18.0

# Install vllm-project/vllm-ascend from wheelnext index.
uv pip install --system -v \
--extra-index-url https://mirrors.huaweicloud.com/ascend/repos/pypi/variant   \
--index-url https://mirrors.tuna.tsinghua.edu.cn/pypi/web/simple   \
vllm-ascend==0.18.0rc1
