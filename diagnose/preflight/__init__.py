"""PREFLIGHT: predict the failures of a deployment before it starts, and prove a fix took after it.

`core.preflight()` reads the environment (pip freeze / pip list / collect bundle, or a live
interpreter through `probe`), the host (nvidia-smi outputs, a bundle, or NVML), the model's
config.json and the launch command, and returns a `Diagnosis` whose findings are the KB rules
a crash would be diagnosed as. `verify.run_verify()` runs the KB's own verify commands.

Nothing here is imported by the crash path; every heavy import is lazy.
"""
