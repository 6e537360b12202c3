# state_dict() tensors share memory with the parameters: clone them for a snapshot
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(2, 2)
sd = model.state_dict()
snapshot = {k: v.clone() for k, v in model.state_dict().items()}
opt = torch.optim.SGD(model.parameters(), lr=1.0)
loss = model(torch.ones(1, 2)).sum()
loss.backward()
opt.step()
print(torch.equal(sd["weight"], model.weight))
print(torch.equal(snapshot["weight"], model.weight))
model.load_state_dict(snapshot)
print(torch.equal(snapshot["bias"], model.bias), sd["bias"].requires_grad)
