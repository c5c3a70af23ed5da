// PcapFilter.g4 - the tcpdump (pcap-filter) expression language.
//
// The structure follows libpcap's grammar (man pcap-filter): 'and' and 'or'
// have the same precedence and associate to the left; 'not' binds tighter;
// a bare operand after 'and'/'or' ("host a or b") inherits the qualifiers
// of the term before it (PcapFilter.cpp resolves that). Arithmetic
// precedence, loosest first: '|' and '^', '&', shifts, '+' '-', '*' '/'
// '%', unary minus.

grammar PcapFilter;

program : expr? EOF ;

expr
  : expr boolop operand        # binaryExpr
  | term                       # termExpr
  ;

boolop : AND | ANDAND | OR | OROR ;

// After 'and'/'or': a term, or a bare address/number that inherits the
// qualifiers of the term before it.
operand : term | id ;

term
  : notop term                 # notTerm
  | rterm                      # plainTerm
  ;

notop : NOT | BANG ;

rterm
  : head id                    # qualified
  | LPAREN expr RPAREN         # parenthesized
  | pname                      # protocol
  | arith relop arith          # relation
  | other                      # otherPrimitive
  ;

head
  : pname? dqual aqual?        # headDirection
  | pname? aqual               # headAddress
  | pname? PROTO               # headProto
  | pname? PROTOCHAIN          # headProtochain
  | pname? GATEWAY             # headGateway
  ;

dqual
  : SRC (OR DST | AND DST)?
  | DST (OR SRC | AND SRC)?
  | ADDR1 | ADDR2 | ADDR3 | ADDR4 | RA | TA
  ;

aqual : HOST | NET | PORT | PORTRANGE ;

id
  : notop id                                  # notId
  | LPAREN id ((AND | ANDAND | OR | OROR) id)* RPAREN  # idList
  | HID SLASH NUM                             # ipv4Prefix
  | HID MASK HID                              # ipv4Mask
  | HID                                       # ipv4
  | HID6 SLASH NUM                            # ipv6Prefix
  | HID6                                      # ipv6
  | EID                                       # mac
  | AID                                       # arcnet
  | NUM                                       # number
  | name                                      # named
  ;

// Protocol names: the keywords that name protocols.
pname
  : LINK | ETHER | IP | IP6 | ARP | RARP | TCP | UDP | ICMP | ICMP6 | IGMP
  | SCTP | AH | ESP | PIM | VRRP | IGRP | CARP | ATALK | AARP | DECNET
  | LAT | SCA | MOPRC | MOPDL | ISO | ESIS | ISIS | L1 | L2 | IIH | LSP
  | SNP | CSNP | PSNP | CLNP | STP | IPX | NETBEUI | RADIO
  ;

// A name: a word, or anything after a backslash (libpcap's ID).
name : WORD | ESCAPED ;

relop : GT | GE | EQ | EQEQ | NE | LT | LE ;

arith
  : LPAREN arith RPAREN                        # parenArith
  | DASH arith                                 # negate
  | arith (STAR | SLASH | PERCENT) arith       # mulDiv
  | arith (PLUS | DASH) arith                  # addSub
  | arith (SHL | SHR) arith                    # shift
  | arith AMP arith                            # bitAnd
  | arith (PIPE | CARET) arith                 # bitOr
  | pname LBRACKET arith (COLON NUM)? RBRACKET # access
  | LEN                                        # length
  | NUM                                        # arithNumber
  | WORD                                       # constant
  ;

other
  : LESS NUM                   # less
  | GREATER NUM                # greater
  | pname? (BROADCAST | MULTICAST)  # cast
  | BYTE NUM byteop NUM        # byteOp
  | VLAN NUM?                  # vlan
  | MPLS NUM?                  # mpls
  | PPPOED                     # pppoed
  | PPPOES NUM?                # pppoes
  | GENEVE NUM?                # geneve
  | INBOUND                    # inbound
  | OUTBOUND                   # outbound
  | IFINDEX NUM                # ifindex
  | LLC (WORD | RNR)?          # llc
  | IFNAME name                # pfIfname
  | RSET name                  # pfRuleset
  | RNR NUM                    # pfRulenum
  | SRNR NUM                   # pfSubrulenum
  | REASON (NUM | name)        # pfReason
  | ACTION name                # pfAction
  | pname? TYPE (NUM | WORD) (SUBTYPE (NUM | WORD))?  # wlanType
  | pname? SUBTYPE WORD        # wlanSubtype
  | pname? DIR (NUM | WORD)    # wlanDir
  | (LANE | METAC | BCC | OAMF4EC | OAMF4SC | SC | ILMIC | OAM | OAMF4
     | CONNECTMSG | METACONNECT)  # atmType
  | (VPI | VCI) (relop? NUM | LPAREN NUM ((OR | OROR) NUM)* RPAREN)  # atmField
  | (FISU | LSSU | MSU | HFISU | HLSSU | HMSU)  # mtp2Type
  | (SIO | OPC | DPC | SLS | HSIO | HOPC | HDPC | HSLS)
    (relop? NUM | LPAREN NUM ((OR | OROR) NUM)* RPAREN)  # mtp3Field
  ;

byteop : AMP | PIPE | LT | GT | EQ ;

// Keywords (before WORD, which they would also match), as libpcap's
// scanner has them.
AND : 'and' ;
OR : 'or' ;
NOT : 'not' ;
SRC : 'src' ;
DST : 'dst' ;
HOST : 'host' ;
NET : 'net' ;
MASK : 'mask' ;
PORT : 'port' ;
PORTRANGE : 'portrange' ;
PROTO : 'proto' ;
PROTOCHAIN : 'protochain' ;
GATEWAY : 'gateway' ;
BROADCAST : 'broadcast' ;
MULTICAST : 'multicast' ;
LESS : 'less' ;
GREATER : 'greater' ;
BYTE : 'byte' ;
LEN : 'len' | 'length' ;
VLAN : 'vlan' ;
MPLS : 'mpls' ;
PPPOED : 'pppoed' ;
PPPOES : 'pppoes' ;
GENEVE : 'geneve' ;
INBOUND : 'inbound' ;
OUTBOUND : 'outbound' ;
IFINDEX : 'ifindex' ;
LLC : 'llc' ;
IFNAME : 'on' | 'ifname' ;
RSET : 'rset' | 'ruleset' ;
RNR : 'rnr' | 'rulenum' ;
SRNR : 'srnr' | 'subrulenum' ;
REASON : 'reason' ;
ACTION : 'action' ;
TYPE : 'type' ;
SUBTYPE : 'subtype' ;
DIR : 'direction' | 'dir' ;
ADDR1 : 'address1' | 'addr1' ;
ADDR2 : 'address2' | 'addr2' ;
ADDR3 : 'address3' | 'addr3' ;
ADDR4 : 'address4' | 'addr4' ;
RA : 'ra' ;
TA : 'ta' ;
LANE : 'lane' ;
METAC : 'metac' ;
BCC : 'bcc' ;
OAM : 'oam' ;
OAMF4 : 'oamf4' ;
OAMF4EC : 'oamf4ec' ;
OAMF4SC : 'oamf4sc' ;
SC : 'sc' ;
ILMIC : 'ilmic' ;
CONNECTMSG : 'connectmsg' ;
METACONNECT : 'metaconnect' ;
VPI : 'vpi' ;
VCI : 'vci' ;
FISU : 'fisu' ;
LSSU : 'lssu' | 'lsu' ;
MSU : 'msu' ;
HFISU : 'hfisu' ;
HLSSU : 'hlssu' ;
HMSU : 'hmsu' ;
SIO : 'sio' ;
OPC : 'opc' ;
DPC : 'dpc' ;
SLS : 'sls' ;
HSIO : 'hsio' ;
HOPC : 'hopc' ;
HDPC : 'hdpc' ;
HSLS : 'hsls' ;
LINK : 'link' | 'ppp' | 'slip' | 'fddi' | 'tr' | 'wlan' ;
ETHER : 'ether' ;
IP : 'ip' ;
IP6 : 'ip6' ;
ARP : 'arp' ;
RARP : 'rarp' ;
TCP : 'tcp' ;
UDP : 'udp' ;
ICMP : 'icmp' ;
ICMP6 : 'icmp6' ;
IGMP : 'igmp' ;
SCTP : 'sctp' ;
AH : 'ah' ;
ESP : 'esp' ;
PIM : 'pim' ;
VRRP : 'vrrp' ;
IGRP : 'igrp' ;
CARP : 'carp' ;
ATALK : 'atalk' ;
AARP : 'aarp' ;
DECNET : 'decnet' ;
LAT : 'lat' ;
SCA : 'sca' ;
MOPRC : 'moprc' ;
MOPDL : 'mopdl' ;
ISO : 'iso' ;
ESIS : 'esis' | 'es-is' ;
ISIS : 'isis' | 'is-is' ;
L1 : 'l1' ;
L2 : 'l2' ;
IIH : 'iih' ;
LSP : 'lsp' ;
SNP : 'snp' ;
CSNP : 'csnp' ;
PSNP : 'psnp' ;
CLNP : 'clnp' ;
STP : 'stp' ;
IPX : 'ipx' ;
NETBEUI : 'netbeui' ;
RADIO : 'radio' ;

ANDAND : '&&' ;
OROR : '||' ;
BANG : '!' ;
LPAREN : '(' ;
RPAREN : ')' ;
LBRACKET : '[' ;
RBRACKET : ']' ;
COLON : ':' ;
SLASH : '/' ;
STAR : '*' ;
PERCENT : '%' ;
PLUS : '+' ;
DASH : '-' ;
AMP : '&' ;
PIPE : '|' ;
CARET : '^' ;
SHL : '<<' ;
SHR : '>>' ;
GE : '>=' ;
LE : '<=' ;
NE : '!=' ;
EQEQ : '==' ;
GT : '>' ;
LT : '<' ;
EQ : '=' ;

// A MAC address: six hexadecimal bytes separated by ':', '-' or '.'
// (libpcap also accepts 0011.2233.4455); before HID6, which matches the
// ':' form too.
EID
  : HEX HEX? ':' HEX HEX? ':' HEX HEX? ':' HEX HEX? ':' HEX HEX? ':' HEX HEX?
  | HEX HEX? '-' HEX HEX? '-' HEX HEX? '-' HEX HEX? '-' HEX HEX? '-' HEX HEX?
  | HEX HEX HEX HEX '.' HEX HEX HEX HEX '.' HEX HEX HEX HEX
  ;
// An IPv6 address: at least two ':' (so that "13:1" in "tcp[13:1]" stays
// two numbers); checked properly when it is used.
HID6
  : HEX* ':' HEX* ':' (HEX | ':')* ('.' DIGIT+ '.' DIGIT+ '.' DIGIT+ '.' DIGIT+)?
  ;
// An IPv4 address or network: 2 to 4 dotted numbers.
HID : DIGIT+ '.' DIGIT+ ('.' DIGIT+ ('.' DIGIT+)?)? ;
NUM : '0' [xX] HEX+ | DIGIT+ ;
// An ARCnet address ($ and one or two hexadecimal digits).
AID : '$' HEX HEX? ;
// Names, as libpcap's scanner reads them: host, network, port and
// protocol names, named constants (tcp-syn, icmp-echo, ...), and port
// ranges (20-30, ftp-http); as the longest match, "20-30" is one name,
// while "20" alone is a number and 10.1.1.1 an address (listed first).
WORD : [a-zA-Z0-9] ([a-zA-Z0-9_.\-]* [a-zA-Z0-9.])? ;
// Anything up to a blank, '!' or a parenthesis after a backslash.
ESCAPED : '\\' ~[ !()\n\t]+ ;

WS : [ \t\r\n]+ -> skip ;
// Anything else is a lexical error, reported with its position.
ERROR_CHAR : . ;

fragment DIGIT : [0-9] ;
fragment HEX : [0-9a-fA-F] ;
