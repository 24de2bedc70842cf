python /home/<user>/GLM-4/basic_demo/glm_server.py
