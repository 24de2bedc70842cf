export USE_PREFIX_CACHING=0
export ATTENTION=paged
export ASCEND_RT_VISIBLE_DEVICES=4
model_id=/home/data/models/baichuan2-7b

text-generation-launcher \
--model-id $model_id \
--port 12359 \
--max-input-length 2048 \
--max-total-tokens 2560 \
--max-batch-prefill-tokens 4096 \
--max-waiting-tokens 20 \
--max-concurrent-requests 200 \
--waiting-served-ratio 1.2 \
--trust-remote-code
