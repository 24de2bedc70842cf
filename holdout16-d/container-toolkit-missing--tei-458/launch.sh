model=Alibaba-NLP/gte-large-en-v1.5
volume=$PWD/data 
sudo docker run --gpus all -p 5001:80 -v $volume:/data --pull always ghcr.io/huggingface/text-embeddings-inference:1.5 --model-id $model
