python -m runx.runx scripts/eval_cityscapes.yml -i
