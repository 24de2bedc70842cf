   sichek nccltest -g 1,0 --expect-bw 0
