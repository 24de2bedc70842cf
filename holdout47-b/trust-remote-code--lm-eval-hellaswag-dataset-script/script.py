   results1 = simple_evaluate( 
            model=lm_obj,
            tasks=["hellaswag", "winogrande", "arc_easy", "arc_challenge", "piqa"],
            num_fewshot=0,
            batch_size=batch_size,
            cache_requests=None,
            log_samples=False,
            bootstrap_iters=0,
            gen_kwargs="max_new_tokens=40",
        )
