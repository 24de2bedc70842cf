CUDA_VISIBLE_DEVICES=3,4,5 python3 ./demos/cli.py --model_dir <model_dir> --t5_model_path <t5_model_path> --num_frames 61 --use_xdit --ulysses_degree 3 --ring_degree 1
