model=tiiuae/falcon-40b-instruct
num_shard=3
volume=$PWD/data

podman run -e RUST_BACKTRACE=full -e CUDA_VISIBLE_DEVICES=0,1,2 -e NVIDIA_VISIBLE_DEVICES=0,1,2 --shm-size 1g -p 8080:80 -v $volume:/data ghcr.io/huggingface/text-generation-inference:0.8 --model-id $model  --sharded true --num-shard $num_shard --env
