nix run github:utensils/comfyui-nix#rocm -- --enable-manager
