# Embedding rows that were not looked up get zero gradient, but AdamW still decays them
import torch
import torch.nn as nn

torch.manual_seed(0)
emb = nn.Embedding(4, 3)
head = nn.Linear(3, 4)
opt = torch.optim.AdamW(list(emb.parameters()) + list(head.parameters()), lr=0.1, weight_decay=0.1)
tokens = torch.tensor([0, 2])
targets = torch.tensor([1, 3])
loss_fn = nn.CrossEntropyLoss()
loss = loss_fn(head(emb(tokens)), targets)
loss.backward()
print(emb.weight.grad)
before = emb.weight.detach().clone()
opt.step()
print((emb.weight - before)[1])
opt.zero_grad(set_to_none=False)
print(emb.weight.grad.abs().sum().item())
