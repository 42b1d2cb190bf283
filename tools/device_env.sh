# tools/device_env.sh — sourced by the device scripts (device_bench.sh,
# device_serve_bench.sh, device_startup.sh) on the GPU machine, with $out
# set: unpacks the carried Vulkan loader (.gl, the device README's recipe),
# points the loader at NVIDIA's ICD where the image registers none, and makes
# the directory of random-weight model files ($models) and $out.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1 && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
models=/tmp/unicorn-models
mkdir -p "$models" "$out"
