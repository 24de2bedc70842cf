docker run --rm -it --gpus all -p 6006:6006 -v data:/mnt/share/petric:ro -v .:/workdir -w /workdir ghcr.io/synerbi/sirf:petric2 /bin/bash
