import ray

@ray.remote
def run_ray_task():
  pass

def run_task():
  run_ray_task.remote()
