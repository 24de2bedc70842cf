  IP='0.0.0.0'
  PORT='11434'
  EXE='bin/ollama'
  ARGS='serve'
  ENV="OLLAMA_HOST=$IP:$PORT'"
  CMD="$ENV $EXE $ARGS"
  echo Running $CMD
  eval $CMD
