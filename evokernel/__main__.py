from evokernel.cli.app import main

main()
