make install \
  NAMESPACE=ai-virtual-agent \
  LLM=llama-3-1-8b-instruct \
  LLM_TOLERATION="nvidia.com/gpu"
