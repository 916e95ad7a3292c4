"""A torch_npu user script, written as for an Ascend device: the calls DeepSpeed's 1-bit Adam, MindSpeed's MXFP8
recipe and MoE quantiser, and vLLM-Ascend's W8A8 layers make, with torch_npu's dtype constants and .npu() moves.

It knows nothing of npu-emu. tests/interop/test_torch_npu_shim.py runs it unmodified with
``npu-emu exec tests/interop/torch_npu_script.py OUT.pt`` and checks every saved output bit for bit against
npu_emu.ops. Usage: torch_npu_script.py OUTPUT [--world-size N]
"""

import argparse

import torch
import torch_npu


def onebit_compress(buffer_m, world_size):
    # deepspeed/runtime/comm/hccl.py, HcclBackend.compressed_allreduce (without the collectives)
    sign_list_packed = torch_npu.npu_sign_bits_pack(buffer_m, world_size).type(torch.int8)
    recv = sign_list_packed.type(torch.uint8).flatten()
    return sign_list_packed, torch_npu.npu_sign_bits_unpack(recv, world_size, torch.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="where torch.save writes the inputs and results")
    parser.add_argument("--world-size", type=int, default=4)
    args = parser.parse_args()

    device = "npu:0" if torch_npu.npu.is_available() else "cpu"
    g = torch.Generator().manual_seed(26)
    inputs, outputs = {}, {}

    inputs["buffer_m"] = torch.randn(1024, generator=g).npu()
    outputs["packed"], outputs["signs"] = onebit_compress(inputs["buffer_m"], args.world_size)

    # MXFP8 activations (vLLM-Ascend w8a8_mxfp8 passes torch's dtype, MindSpeed torch_npu's constants), MXFP4
    inputs["x"] = torch.randn(16, 128, generator=g).to(torch.bfloat16).npu()
    outputs["x_fp8"], outputs["x_fp8_scale"] = torch_npu.npu_dynamic_mx_quant(inputs["x"], dst_type=torch.float8_e4m3fn)
    outputs["x_e5m2"], outputs["x_e5m2_scale"] = torch_npu.npu_dynamic_mx_quant(
        inputs["x"], axis=-1, dst_type=torch_npu.float8_e5m2)
    outputs["x_fp4"], outputs["x_fp4_scale"] = torch_npu.npu_dynamic_mx_quant(
        inputs["x"], dst_type=torch_npu.float4_e2m1fn_x2)

    # MoE tokens in two expert groups (group_index: cumulative ends), MXFP8 along the token axis
    inputs["tokens"] = torch.randn(64, 64, generator=g).to(torch.float16).npu()
    inputs["group_index"] = torch.tensor([32, 64], dtype=torch.int32, device=device)
    outputs["tokens_fp8"], outputs["tokens_scale"] = torch_npu.npu_grouped_dynamic_mx_quant(
        inputs["tokens"], inputs["group_index"], round_mode="rint", dst_type=torch_npu.float8_e4m3fn, blocksize=32)

    # W8A8 linear, dynamic per-token scale: weight stored (n, k), passed transposed
    inputs["xq"] = torch.randint(-128, 128, (16, 64), dtype=torch.int8, generator=g).npu()
    inputs["wq"] = torch.randint(-128, 128, (32, 64), dtype=torch.int8, generator=g).npu()
    inputs["w_scale"] = (torch.rand(32, generator=g) * 0.01 + 0.001).npu()
    inputs["pertoken"] = (torch.rand(16, generator=g) + 0.5).npu()
    outputs["y_dynamic"] = torch_npu.npu_quant_matmul(inputs["xq"], inputs["wq"].t(), inputs["w_scale"],
                                                      pertoken_scale=inputs["pertoken"], output_dtype=torch.bfloat16)

    # W8A8 static, as torchair / sglang graphs call it: torch.ops.npu directly, scale packed into int64 words
    inputs["bias"] = torch.randint(-1000, 1000, (32,), dtype=torch.int32, generator=g).npu()
    outputs["deq_scale"] = torch.ops.npu.npu_trans_quant_param(inputs["w_scale"])
    outputs["y_static"] = torch.ops.npu.npu_quant_matmul(inputs["xq"], inputs["wq"].t(), outputs["deq_scale"],
                                                         bias=inputs["bias"], output_dtype=torch.float16)

    torch.npu.synchronize()
    torch.save({"inputs": {k: v.cpu() for k, v in inputs.items()}, "outputs": {k: v.cpu() for k, v in outputs.items()},
                "device": device}, args.output)
    print(f"saved {len(outputs)} results to {args.output}")


if __name__ == "__main__":
    main()
