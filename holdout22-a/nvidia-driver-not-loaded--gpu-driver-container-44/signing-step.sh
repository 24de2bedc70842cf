    if [ -n "${PRIVATE_KEY}" ]; then
        echo "Signing NVIDIA driver kernel modules..."
        sh -c "PATH=${PATH}:/usr/src/linux-headers-${KERNEL_VERSION}/scripts && \
          kmodsign sha512 ${PRIVATE_KEY} /drivers/kernel/pubkey.x509 nvidia.ko && \
          kmodsign sha512 ${PRIVATE_KEY} /drivers/kernel/pubkey.x509 nvidia.ko nvidia.ko.sign && \
          kmodsign sha512 ${PRIVATE_KEY} /drivers/kernel/pubkey.x509 nvidia-modeset.ko nvidia-modeset.ko.sign && \
          kmodsign sha512 ${PRIVATE_KEY} /drivers/kernel/pubkey.x509 nvidia-uvm.ko"
        ls -l
