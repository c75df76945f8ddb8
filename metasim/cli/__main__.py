from metasim.cli.main import main

main()
