# Sourced by the .ci scripts: sets $uv to the project's uv (.uv/, the same one the Makefile uses),
# installing it from PyPI the first time.
uv="${UV:-$PWD/.uv/bin/uv}"
if [ ! -x "$uv" ]; then
  "${PYTHON:-python3}" -m venv .uv
  .uv/bin/python -m pip install --quiet --disable-pip-version-check 'uv>=0.9'
  uv="$PWD/.uv/bin/uv"
fi
