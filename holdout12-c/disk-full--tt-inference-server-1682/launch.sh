python3 run.py --model stable-diffusion-xl-base-1.0 --device galaxy --workflow server --docker-server --skip-system-sw-validation
