import ray

def generate_remote_args_fn():
    pg = ray.util.placement_group(
        [{
            "GPU": 1,
            "CPU": 1,
            "accelerator_type:A10G": 0.0001,
        }],
        strategy="PACK",
    )
    return {
        "scheduling_strategy": ray.util.scheduling_strategies.PlacementGroupSchedulingStrategy(pg)
    }

@ray.remote(**generate_remote_args_fn())
def f():
    import os
    return os.environ["CUDA_VISIBLE_DEVICES"]

ray.get(f.remote())  # returns ''
