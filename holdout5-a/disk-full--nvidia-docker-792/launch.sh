docker pull nvcr.io/nvidia/digits:18.01
