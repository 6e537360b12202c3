# Cross-device copy_: values move between CPU and GPU, the graph stays connected
import torch

if torch.cuda.is_available():
    # A leaf on the GPU that requires grad.
    g = torch.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    # A plain tensor in CPU memory.
    h = torch.zeros(2, device="cpu")
    # copy_ copies across devices (the only op that does so implicitly) and records CopyBackwards.
    h.copy_(g)
    # Gradients flow back from the CPU tensor to the GPU leaf.
    (h * 3).sum().backward()
    print(g.grad)
else:
    # Without CUDA: say what the GPU run shows instead of failing.
    print("No CUDA device here. On a GPU, h.copy_(g) copies g's values from GPU memory into h's CPU storage,")
    print("h becomes a non-leaf with CopyBackwards, and backward puts 3s into g.grad on the GPU.")
    h = torch.zeros(2)
    g = torch.tensor([1.0, 2.0], requires_grad=True)
    # The same graph on one device, for comparison.
    h.copy_(g)
    (h * 3).sum().backward()
