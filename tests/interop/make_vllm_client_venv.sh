#!/bin/sh
# The venv tests/interop/test_vllm_client.py runs vLLM-Ascend in (docs/integrations/torch.md §8):
#   sh tests/interop/make_vllm_client_venv.sh VENV_DIR
#   NPU_EMU_VLLM_PYTHON=VENV_DIR/bin/python pytest -m vllm tests/interop/test_vllm_client.py
# vllm-ascend 0.23.0 ships a cp311 wheel (0.23.0.post1 is an sdist that needs the CANN toolkit); both it and vllm
# 0.23.0 go in without their dependencies (they pin a CUDA / NPU torch), then the pure-Python ones they import.
set -e
VENV=${1:?usage: make_vllm_client_venv.sh VENV_DIR}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
python3.11 -m venv "$VENV" 2>/dev/null || python3 -m venv "$VENV"
. "$VENV/bin/activate"
pip install -q --upgrade pip
pip install -q torch==2.13.0            # the CPU build
pip install -q --no-deps vllm-ascend==0.23.0 vllm==0.23.0
pip install -q pydantic regex cbor2 psutil pyzmq urllib3 aiohttp requests openai-harmony openai pillow pybase64 \
    cachetools msgspec cloudpickle uvloop py-cpuinfo prometheus_client xgrammar fastapi partial_json_parser \
    llguidance einops gguf ijson mistral_common transformers==5.5.4 compressed-tensors==0.17.0
pip install -q -e "$HERE[test]"
