from kplan.cli.app import main

main()
