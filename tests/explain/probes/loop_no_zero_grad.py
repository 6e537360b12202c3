# a training loop that never resets the gradients
torch.manual_seed(0)
x = torch.randn(8, 3)
y = torch.randn(8, 1)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    pred = model(x)
    loss = ((pred - y) ** 2).mean()
    loss.backward()
    opt.step()
# loop(7): model.weight.grad and model.bias.grad never reset in the loop: from turn 2 on (turns 2–4)
# loop(7): 'fix': 'opt.zero_grad()', 'line': 10
# says(10): model.weight.grad and model.bias.grad were not reset since the backward of turn 1
# says(10): add `opt.zero_grad()` in the loop before `loss.backward()` (line 10)
# plain: torch.manual_seed(0)
# plain: x2, y2 = torch.randn(8, 3), torch.randn(8, 1)
# plain: m2 = torch.nn.Linear(3, 1)
# plain: sums = [torch.zeros_like(p) for p in m2.parameters()]
# plain: for _ in range(4):
# plain:     grads = torch.autograd.grad(((m2(x2) - y2) ** 2).mean(), list(m2.parameters()))
# plain:     with torch.no_grad():
# plain:         for p, s, g in zip(m2.parameters(), sums, grads):
# plain:             s += g
# plain:             p -= 0.1 * s
# plain: assert all(torch.allclose(p.grad, s) for p, s in zip(model.parameters(), sums))
# plain: assert all(torch.allclose(p, q) for p, q in zip(model.parameters(), m2.parameters()))
