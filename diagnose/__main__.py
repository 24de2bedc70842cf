from diagnose.cli_fast import main

main()
