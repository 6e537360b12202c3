# lists and dicts of tensors: name[0] and name["k"] entries
import torch

ts = [torch.ones(2), torch.zeros(2)]
ts.append(ts[0] * 3)
params = {"w": torch.ones(2, requires_grad=True), "b": torch.zeros(1, requires_grad=True)}
nested = {"layer": [params["w"], torch.arange(3)]}
loss = (params["w"] * 2).sum() + params["b"].sum()
loss.backward()
ts[1].add_(5)
popped = ts.pop(0)
numbered = {0: torch.tensor(1.5), 7: torch.tensor([2, 3])}
print(len(ts), params["w"].grad)
