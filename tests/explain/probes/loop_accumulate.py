# gradient accumulation on purpose: two backward passes per update, then a reset
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for i in range(4):
    loss = (w * torch.randn(3)).sum() ** 2
    loss.backward()
    if i % 2 == 1:
        opt.step()
        opt.zero_grad()
# says(7): Gradients accumulate: this is backward #2 into w.grad since it was last reset
# nowhere: not reset since
# nowhere: never reset
