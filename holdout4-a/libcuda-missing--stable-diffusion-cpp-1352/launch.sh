docker run -it --rm ghcr.io/leejet/stable-diffusion.cpp:master-cuda
