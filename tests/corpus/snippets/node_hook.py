# grad_fn hooks: what does MulBackward0 receive and send during backward?
import torch

a = torch.tensor([2.0, 3.0], requires_grad=True)
b = torch.tensor([4.0, 5.0], requires_grad=True)
c = a * b


def show(grad_inputs, grad_outputs):
    print("grad_inputs:", grad_inputs)
    print("grad_outputs:", grad_outputs)


c.grad_fn.register_hook(show)
d = (c * c).sum()
d.backward()
print(a.grad, b.grad)
