  hardware.nvidia-container-toolkit.enable = true;
  hardware.nvidia-container-toolkit.mount-nvidia-executables = false;
  virtualisation = {
    docker = {
      enable = true;
      package = pkgs.docker_25;
      enableOnBoot = true;
      extraOptions = "--default-runtime=nvidia";
      rootless = {
        enable = true;
        setSocketVariable = true;
      };
    };
  };
