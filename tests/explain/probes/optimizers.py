# what an optimizer's step and zero_grad change
p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
opt = torch.optim.SGD([p], lr=0.1)
opt.step()
# plain: assert p.tolist() == [1.0, 2.0] and p._version == 0
(p * 2).sum().backward()
opt.step()
# plain: assert torch.allclose(p, torch.tensor([0.8, 1.8])) and p._version == 1
opt.zero_grad(set_to_none=False)
# plain: assert p.grad.tolist() == [0.0, 0.0]
opt.zero_grad()
# plain: assert p.grad is None
