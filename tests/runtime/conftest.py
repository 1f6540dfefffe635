from tests.runtime._tmux_fixtures import tmux_socket

__all__ = ["tmux_socket"]
