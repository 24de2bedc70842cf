First machine :  ray start --head --port=6380 --dashboard-host=0.0.0.0
Second machine: ray start --address='161.97.xx.xxx:6380' --redis-password='5241590000000000'
