 ./scripts/start_container.sh
