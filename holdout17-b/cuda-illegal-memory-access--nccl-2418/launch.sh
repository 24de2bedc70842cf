all_reduce_perf -b 8 -e 16M -f 2 -g 2
