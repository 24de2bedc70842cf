sudo docker compose --profile auto up --build
