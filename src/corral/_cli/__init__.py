"""What `corral.cli`'s typer commands run: one module per subcommand or run mode, imported when it runs."""
