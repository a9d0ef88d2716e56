from clustersim.cli import main

main()
