# looping over a dict of parameters to update them
import torch

params = {"w": torch.tensor([1.0, 2.0], requires_grad=True), "b": torch.tensor([0.5], requires_grad=True)}
loss = (params["w"] ** 2).sum() + params["b"].sum() * 3
loss.backward()
for name, p in params.items():
    with torch.no_grad():
        p.sub_(0.5 * p.grad)
    p.grad = None
    print(name, p)
keys = list(params.keys())
