# Module hooks: register_forward_hook and register_full_backward_hook, then remove them
import torch
import torch.nn as nn

torch.manual_seed(0)
lin = nn.Linear(4, 3)
shapes = []


def record(module, inputs, output):
    shapes.append(tuple(output.shape))


def show_grad(module, grad_input, grad_output):
    print("grad_output", grad_output[0])


h1 = lin.register_forward_hook(record)
h2 = lin.register_full_backward_hook(show_grad)
x = torch.ones(2, 4, requires_grad=True)
lin(x).sum().backward()
h1.remove()
h2.remove()
lin(x).sum().backward()
print(shapes, x.grad)
