"""rpc_nvmf_doca: the DOCA NVMe emulation commands for SPDK's rpc.py, against nvme-emu.

Load it the way DOCA's guide does, with this folder on PYTHONPATH:

    PYTHONPATH=$SPDK/python:$NVME_EMU/scripts rpc.py -s SOCK --plugin rpc_nvmf_doca \
        nvmf_doca_create_function -d mlx5_0

An emulation manager ("-d DEV", a DOCA device on a BlueField) is an nvme-emu emulation manager:
a QEMU reached over QMP (nvmf_emu_create_manager --name mlx5_0 --qmp_socket ...) or "local".
Only rpc.py's long-standing plugin interface is used (spdk_rpc_plugin_initialize, and
args.client.call), so every rpc.py release since SPDK 21.x can load it.
"""

import json


def _print(result):
    if result is not None:
        print(json.dumps(result, indent=2))


def spdk_rpc_plugin_initialize(subparsers):
    def nvmf_doca_get_managers(args):
        _print(args.client.call('nvmf_doca_get_managers'))

    p = subparsers.add_parser('nvmf_doca_get_managers',
                              help='List the emulation managers (DOCA devices)')
    p.set_defaults(func=nvmf_doca_get_managers)

    def nvmf_doca_create_function(args):
        params = {'dev_name': args.dev_name}
        if args.vuid:
            params['vuid'] = args.vuid
        _print(args.client.call('nvmf_doca_create_function', params))

    p = subparsers.add_parser('nvmf_doca_create_function',
                              help='Create an emulated NVMe function; prints its VUID')
    p.add_argument('-d', '--dev-name', dest='dev_name', required=True,
                   help='emulation manager (device) name')
    p.add_argument('-v', '--vuid', help='VUID to give the function (default: generated)')
    p.set_defaults(func=nvmf_doca_create_function)

    def nvmf_doca_destroy_function(args):
        _print(args.client.call('nvmf_doca_destroy_function',
                                {'dev_name': args.dev_name, 'vuid': args.vuid}))

    p = subparsers.add_parser('nvmf_doca_destroy_function',
                              help='Destroy an emulated function')
    p.add_argument('-d', '--dev-name', dest='dev_name', required=True,
                   help='emulation manager (device) name')
    p.add_argument('-v', '--vuid', required=True, help='VUID of the function')
    p.set_defaults(func=nvmf_doca_destroy_function)

    def nvmf_doca_list_functions(args):
        _print(args.client.call('nvmf_doca_list_functions', {'dev_name': args.dev_name}))

    p = subparsers.add_parser('nvmf_doca_list_functions',
                              help='List the emulated functions of a manager')
    p.add_argument('-d', '--dev-name', dest='dev_name', required=True,
                   help='emulation manager (device) name')
    p.set_defaults(func=nvmf_doca_list_functions)
