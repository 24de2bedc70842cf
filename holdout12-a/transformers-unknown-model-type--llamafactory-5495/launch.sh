python src/webdemo.py \
    --model_name_or_path /home/2tdisk/working/AI/model/Qwen2-VL \
    --template qwen2_vl
