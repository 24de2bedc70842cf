export HFTOKEN="..."
export MODELDIR="/mnt"
export MODELNAME="meta-llama/Meta-Llama-3-8B"

helm install chatqna chatqna --set llm-uservice.HUGGINGFACEHUB_API_TOKEN=${HFTOKEN} --set llm-uservice.tgi.volume=${MODELDIR} --set llm-uservice.tgi.LLM_MODEL_ID=${MODELNAME}
