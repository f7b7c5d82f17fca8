from mcpipechekr.cli import main

main()
