docker run -d \
> --entrypoint /bin/bash \
> --network host \
        -v /data:/data \
        vllm:0.7.3-python3.11-cuda12.4-debian12 \
    -c "ray start --block --address=127.0.0.1:6379"> --runtime=nvidia \
> --name workernode \
> --shm-size 10.24g \
> --gpus "device=3" \
> -e VLLM_HOST_IP=127.0.0.1 \
> -e MASTER_ADDR=127.0.0.1 \
> -e MASTER_PORT=29500 \
> -v /data:/data \
> REGISTRY/ai-group/vllm:0.7.3-python3.11-cuda12.4-debian12 \
>     -c "ray start --block --address=127.0.0.1:6379"
