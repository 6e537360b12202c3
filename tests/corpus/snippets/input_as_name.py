# `input` as an ordinary parameter and variable name, as PyTorch's docs write it
import torch


def scaled_relu(input, scale=2.0):
    out = torch.relu(input) * scale
    return out


input = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
output = scaled_relu(input)
output.sum().backward()
print(input.grad)
