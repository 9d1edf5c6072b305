# tests/unit/pcie: the PCIe-emulation transport (controller/pcie_*.c) in process: controllers on a
# server thread with real poll groups and malloc bdevs, driven by the vfio-user test client.
pcie_TEST_LIBS := host controller backend dpa hw vfu common
